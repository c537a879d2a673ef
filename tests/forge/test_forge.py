"""The pure forge: trace candidates, near duplicates, families, failure signs, chunking,
grounding, the gap band, and difficulty tiers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge_service.forge.documents import Document, chunk, parse_documents
from judge_service.forge.similar import duplicate_of, families
from judge_service.forge.synthesis import GapBand, grounding_reason, synthesise
from judge_service.forge.text import answers_match, leaks, quote_in, supported_by
from judge_service.forge.tiers import ScoredSample, task_stats, tier_shares
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.conversation import parse_traces
from judge_service.traces.inputs import ForgeInputError
from tests.forge_data import bot, trace, traces, user


def jsonl(rows: list[Any]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def test_repeated_requests_give_one_task_each_with_duplicates_counted_and_failures_marked():
    forged = forge_traces(parse_traces(jsonl(traces())))
    requests = sorted(t.first.request for t in forged.tasks)
    assert requests == [
        "Can you also order me a new debit card for my savings account?",
        "How do I reset my online banking password?",
        "Please freeze my credit card, I lost it.",
        "What is the daily limit for card withdrawals at ATMs?",
    ]
    assert forged.counts() == {
        "traces": 7,
        "candidates": 8,
        "duplicates_merged": 4,
        "tasks": 4,
        "families": forged.counts()["families"],
        "failed_traces": 4,
        # reset, limit and freeze: repeats agree (no writes); the debit card is one failed run,
        # whose reference is proposed
        "with_reference": 4,
        "needs_review": 1,
    }
    reset = next(t for t in forged.tasks if "reset" in t.first.request)
    assert reset.trace_ids == ["t1", "t2", "t3"] and len(reset.merged) == 2
    assert {k: [s["kind"] for s in v] for k, v in forged.failed.items()} == {
        "t3": ["user_complaint"],
        "t4": ["tool_error"],
        "t5": ["retry_loop"],
        "t6": ["abandoned"],
    }
    assert [f["kind"] for f in reset.failures] == ["user_complaint"]
    # the prompt is the conversation up to the turn, with the system prompt and tools
    order = next(t for t in forged.tasks if "debit card" in t.first.request)
    assert order.first.prompt[0]["role"] == "system" and len(order.first.prompt) == 6
    assert order.first.tools and order.first.tools[0]["function"]["name"] == "lookup_account"


def test_acknowledgements_corrections_and_short_answers_are_not_new_work():
    forged = forge_traces(parse_traces(jsonl(traces())))
    requests = [c.request for t in forged.tasks for c in [t.first, *t.merged]]
    for follow_up in ("thanks", "The gold card.", "That's wrong, the app has a reset button."):
        assert follow_up not in requests


def test_families_are_named_by_top_terms_and_keep_unrelated_requests_apart():
    texts = [
        "reset my online banking password",
        "I forgot my banking password, how to reset it",
        "freeze my lost credit card",
        "my credit card was stolen, freeze it",
    ]
    found = families(texts)
    assert sorted(sorted(f.members) for f in found) == [[0, 1], [2, 3]]
    names = {f.name for f in found}
    assert any("password" in n for n in names) and any("card" in n for n in names)


def test_near_duplicate_threshold_keeps_different_requests_apart():
    texts = [
        "Please freeze my credit card, I lost it.",
        "please freeze my credit-card -- I lost it!",
        "Please freeze my debit card, I lost it.",
        "What is the daily limit for card withdrawals?",
        "What is the weekly limit for card withdrawals?",
    ]
    assert duplicate_of(texts) == [0, 0, 2, 3, 4]


@pytest.mark.parametrize(
    ("lines", "line", "field"),
    [
        ([trace("a", bot("hello"))], 1, "messages"),
        ([trace("a", user("hi")), "{not json"], 2, None),
        ([trace("a", user("hi")), {"id": "b", "messages": []}], 2, "messages"),
        ([trace("a", user("hi")), trace("a", user("yo"))], 2, "id"),
        ([{"id": "a", "messages": [{"role": "robot", "content": "x"}]}], 1, "messages.0.role"),
        (["[1, 2]"], 1, None),
    ],
)
def test_bad_traces_name_the_line_and_field(lines: list[Any], line: int, field: str | None):
    with pytest.raises(ForgeInputError) as error:
        parse_traces(jsonl(lines))
    assert error.value.line == line and error.value.field == field
    assert str(error.value).startswith(f"line {line}: ")


def test_empty_documents_are_refused_by_line():
    with pytest.raises(ForgeInputError) as error:
        parse_documents(jsonl([{"id": "a", "text": "fine"}, {"id": "b", "text": "  "}]))
    assert (error.value.line, error.value.field) == (2, "text")


def test_chunking_is_deterministic_and_spans_point_into_the_text():
    text = ("A paragraph about glaciers. " * 8 + "\n\n") * 5
    document = Document("d", text)
    first, second = chunk(document, 400), chunk(document, 400)
    assert first == second and len(first) > 2
    for piece in first:
        assert text[piece.start : piece.end] == piece.text and len(piece.text) <= 400


def test_text_checks():
    assert quote_in("The glacier is 23 km long.", "the glacier is  23 KM long")
    assert not quote_in("The glacier is 23 km long.", "the glacier is 24 km long")
    assert supported_by("23 km", "it is about 23 km long") and not supported_by("30 km", "23 km")
    assert leaks("Is the answer 23 km or not?", "23 km") and not leaks("How long is it?", "23 km")
    assert answers_match("It is about 23 km.", "23 km") and not answers_match("230 km", "23 km")


CHUNK = chunk(Document("glaciers.md", "The Aletsch Glacier is about 23 kilometres long."))[0]


def test_grounding_reasons():
    good = {
        "question": "How long is the Aletsch?",
        "answer": "23 kilometres",
        "quote": "about 23 kilometres long",
    }
    assert grounding_reason(CHUNK, good) is None
    assert grounding_reason(CHUNK, {**good, "quote": "about 40 kilometres long"}) == "ungrounded"
    assert grounding_reason(CHUNK, {**good, "answer": "40 kilometres"}) == "ungrounded"
    assert grounding_reason(CHUNK, {**good, "quote": ""}) == "ungrounded"
    leak = {**good, "question": "Is the Aletsch 23 kilometres long?"}
    assert grounding_reason(CHUNK, leak) == "leaks_answer"


def scripted(
    proposal: dict[str, str], verifier: list[str], solver: list[str], calls: list | None = None
):
    async def ask(role: str, index: int, messages: list, schema: dict, sample: int) -> dict:
        if calls is not None:
            calls.append((role, index, sample, messages))
        if role == "generator":
            return proposal
        answers = verifier if role == "verifier" else solver
        return {"answer": answers[(index if role == "verifier" else sample) % len(answers)]}

    return ask


PROPOSAL = {
    "question": "How long is the Aletsch Glacier?",
    "answer": "23 kilometres",
    "quote": "about 23 kilometres long",
}


async def test_a_generator_that_invents_quotes_yields_no_task():
    invented = {**PROPOSAL, "quote": "the glacier measures 23 kilometres end to end"}
    result = await synthesise(
        [CHUNK, CHUNK], scripted(invented, ["23 kilometres"], ["no"]), verifiers=2
    )
    assert result.tasks == [] and dict(result.dropped) == {"ungrounded": 2}


async def test_a_solver_that_knows_everything_keeps_nothing():
    result = await synthesise(
        [CHUNK], scripted(PROPOSAL, ["23 kilometres"], ["23 kilometres"]), verifiers=1
    )
    assert result.tasks == [] and dict(result.dropped) == {"too_easy": 1}


async def test_the_gap_keeps_the_task_with_its_quote_and_both_pass_rates():
    calls: list = []
    solver = ["23 kilometres", "I don't know", "50 km", "no idea"]
    ask = scripted(PROPOSAL, ["It is 23 kilometres", "23 kilometres", "12 km"], solver, calls)
    result = await synthesise([CHUNK], ask, verifiers=3, samples_per_task=4)
    assert len(result.tasks) == 1 and not result.dropped
    task = result.tasks[0]
    assert task.with_context == pytest.approx(2 / 3) and task.without_context == 0.25
    assert task.source() == {
        "document": "glaciers.md",
        "chunk": 0,
        "span": [0, 48],
        "quote": "about 23 kilometres long",
    }
    solver_prompts = [m for role, _, _, m in calls if role == "solver"]
    assert len(solver_prompts) == 4 and all(
        "Aletsch Glacier is about" not in str(m) for m in solver_prompts
    )


async def test_unanswerable_too_hard_and_duplicates_are_counted():
    result = await synthesise(
        [CHUNK], scripted(PROPOSAL, ["12 km", "23 kilometres"], ["x"]), verifiers=2
    )
    assert dict(result.dropped) == {"unanswerable": 1}
    result = await synthesise(
        [CHUNK], scripted(PROPOSAL, ["23 kilometres"], ["no idea"]), verifiers=1
    )
    assert dict(result.dropped) == {"too_hard": 1}
    ask = scripted(PROPOSAL, ["23 kilometres"], ["23 kilometres", "no"])
    result = await synthesise([CHUNK, CHUNK, CHUNK], ask, verifiers=1, samples_per_task=2)
    assert len(result.tasks) == 1 and dict(result.dropped) == {"duplicate": 2}
    result = await synthesise([CHUNK], ask, verifiers=1, samples_per_task=2, band=GapBand(0.0, 0.4))
    assert dict(result.dropped) == {"too_easy": 1}


async def test_model_errors_are_counted_not_raised():
    async def broken(*_: Any) -> dict:
        raise RuntimeError("down")

    result = await synthesise([CHUNK], broken, verifiers=1)
    assert result.tasks == [] and dict(result.dropped) == {"model_error": 1}


def sample(task: str, step: int, reward: float | None) -> ScoredSample:
    return ScoredSample(task, step, reward is not None, reward)


def test_tiers_easy_hard_learnable_and_all_equal_is_never_learnable():
    rows = [
        *(sample("easy", s, 1.0) for s in (0, 0, 1, 1)),
        *(sample("hard", s, 0.0) for s in (0, 0, 1, 1)),
        *(sample("mixed", s, r) for s, r in ((0, 1.0), (0, 0.0), (1, 0.8), (1, 0.2))),
        *(sample("flat", s, 0.7) for s in (0, 0)),
        sample("masked", 0, None),
    ]
    stats = {s.task: s for s in task_stats(rows)}
    assert {k: v.tier for k, v in stats.items()} == {
        "easy": "too_easy",
        "hard": "too_hard",
        "mixed": "learnable",
        "flat": "too_easy",
        "masked": None,
    }
    assert stats["mixed"].pass_rate == 0.5 and stats["mixed"].steps == [0, 1]
    assert stats["mixed"].reward_std == pytest.approx(0.4)
    shares = tier_shares(rows, stats.values())
    assert shares[1] == {"too_easy": 1 / 3, "learnable": 1 / 3, "too_hard": 1 / 3}
