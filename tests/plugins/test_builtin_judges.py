"""The deterministic built-in judges: reference_match, numeric_match, regex_match.

Judges are built through the registry, the way the service builds them.
"""

from __future__ import annotations

from typing import Any

import pytest

from judge_service import wire
from judge_service.contracts import JudgeContext
from judge_service.core.registry import PluginError, Registry
from judge_service.domain import Sample, SampleNotScorable


def judge(name: str, **options: Any) -> Any:
    return Registry().create("judges", name, **options)


def sample(completion: Any, reference: Any = None, prompt: Any = "What is it?") -> Sample:
    """A domain sample built the way the service builds one: validated by the wire model."""
    incoming = wire.SampleIn.model_validate(
        {"id": "s", "prompt": prompt, "completion": completion, "reference": reference}
    )
    return Sample.model_validate(incoming.model_dump(mode="json"))


async def score(name: str, completion: Any, reference: Any = None, **options: Any) -> float:
    result = await judge(name, **options).score(sample(completion, reference), JudgeContext())
    assert 0.0 <= result.score <= 1.0
    assert isinstance(result.rationale, str)
    return result.score


def chat(final: str) -> list[dict[str, Any]]:
    """An agent transcript: a tool call, its result, then the final assistant answer."""
    return [
        {"role": "user", "content": "What is the capital of France? Use the tool."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"country": "France"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Lyon is the biggest? No: Paris."},
        {"role": "assistant", "content": [{"type": "text", "text": final}]},
    ]


# --- reference_match ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        ("Paris", "Paris"),
        ("paris", "PARIS"),
        ("Paris.", "paris"),
        ("paris!", "Paris"),
        ("The Eiffel Tower", "eiffel tower"),
        ("An apple", "apple"),
        ("  Paris \n", "Paris"),
        (r"We simplify and get \boxed{42}", "42"),
        (r"so x = \boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        ("The answer is Blue.", "blue"),
        ("Some reasoning.\nFinal answer: 42", "42"),
        ("First 3 apples, then 4 more.\n#### 7", "7"),
        ("3.0", "3"),
        ("3", "3.0"),
        ("The answer is 3.0", "3"),
        ("1,234", "1234"),
    ],
)
async def test_reference_match_accepts_equivalent_answers(completion: str, reference: str) -> None:
    assert await score("reference_match", completion, reference) == 1.0


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        ("Lyon", "Paris"),
        ("4", "3"),
        ("3.5", "3"),
        (r"\boxed{41}", "42"),
        ("The answer is 41.\n", "42"),
        ("#### 8", "7"),
        ("Paris is nice but the answer is Lyon", "Paris"),
    ],
)
async def test_reference_match_rejects_wrong_answers(completion: str, reference: str) -> None:
    assert await score("reference_match", completion, reference) == 0.0


# The whole-phrase rule (plugins/judges/reference_match.py): a short answer that states the
# reference once passes; enumerations, hedges between candidates, denials, longer names and
# substrings fail.
@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        ("The capital of France is Paris.", "Paris"),
        ("It's Paris.", "paris"),
        ("Yes, Paris, of course.", "Paris"),
        ("I checked every source.\nThe capital is Paris.", "Paris"),
        ("It is in New York, I believe.", "New York"),
        ("42.", "42"),
        ("**42**", "42"),
        (r"\boxed{42}", "42"),
        ("42.0", "42"),
        ("The total comes to 1,234.", "1234"),
        ("6 x 7 = 42", "42"),
        ("So the result is **42**.", "42"),
        ("It costs $42.", "42"),
        (
            "I looked at Lyon, Nice and Marseille first. After a long comparison of every "
            "candidate, the choice became clear. It is Paris.",
            "Paris",
        ),
        (
            "After comparing the populations, the histories and the seats of government of "
            "every large French city, the capital is **Paris** without any doubt.",
            "Paris",
        ),
    ],
)
async def test_reference_match_accepts_a_short_answer_that_states_the_reference(
    completion: str, reference: str
) -> None:
    assert await score("reference_match", completion, reference) == 1.0


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        ("Paris, Lyon or Nice", "Paris"),
        ("Paris, Lyon, Nice", "Paris"),
        ("Either Paris or Lyon.", "Paris"),
        ("Paris, maybe Lyon.", "Paris"),
        ("I think it's Paris, but it might be Lyon.", "Paris"),
        ("Paris and Lyon", "Paris"),
        ("Paris/Lyon", "Paris"),
        ("It is not Paris.", "Paris"),
        ("Paris Hilton", "Paris"),
        ("The capital is Paris Lyon Nice", "Paris"),
        ("Paris is the capital, and Paris is lovely.", "Paris"),
        ("1425", "42"),
        ("The code is 1425.", "42"),
        ("It's 42, not 41", "42"),
        ("42 or 43", "42"),
        ("41 42 43", "42"),
        (
            "France has many large cities: Marseille, Lyon, Toulouse, Nice, Paris and "
            "Bordeaux are among them, each with its own history.",
            "Paris",
        ),
        (
            "The largest cities of France are easy to name if you think about it for a while "
            "and Paris is one of them.",
            "Paris",
        ),
        (
            "There are several bold guesses here, from **Paris** to plenty of other cities "
            "in France, or perhaps somewhere else entirely.",
            "Paris",
        ),
    ],
)
async def test_reference_match_rejects_mentions_among_others_hedges_and_substrings(
    completion: str, reference: str
) -> None:
    assert await score("reference_match", completion, reference) == 0.0


async def test_reference_match_says_why_it_rejects() -> None:
    result = await judge("reference_match").score(
        sample("Paris, Lyon or Nice", "Paris"), JudgeContext()
    )
    assert result.score == 0.0 and "alternatives" in result.rationale
    result = await judge("reference_match").score(
        sample("The capital of France is Paris.", "Paris"), JudgeContext()
    )
    assert result.score == 1.0 and "states" in result.rationale


async def test_reference_match_uses_the_last_boxed_answer() -> None:
    text = r"First guess \boxed{41}, on reflection \boxed{42}"
    assert await score("reference_match", text, "42") == 1.0
    assert await score("reference_match", text, "41") == 0.0


@pytest.mark.parametrize(
    "completion",
    [
        "The answer is Paris.\nI hope this answers your question.",
        "Final answer: Paris\nAnswering that took a while.",
    ],
)
async def test_reference_match_marker_words_inside_other_words_are_not_markers(
    completion: str,
) -> None:
    # "answers"/"answering" are not an "answer:" marker; the committed answer is Paris.
    assert await score("reference_match", completion, "Paris") == 1.0


async def test_reference_match_accepts_any_of_a_list_of_references() -> None:
    assert await score("reference_match", "London", ["Paris", "London"]) == 1.0
    assert await score("reference_match", "Berlin", ["Paris", "London"]) == 0.0


async def test_reference_match_numeric_reference() -> None:
    assert await score("reference_match", "The answer is 12", 12) == 1.0
    assert await score("reference_match", "The answer is 12", 12.0) == 1.0
    assert await score("reference_match", "The answer is 13", 12) == 0.0


@pytest.mark.parametrize(
    ("final", "reference", "expected"),
    [("The answer is Paris.", "paris", 1.0), ("Lyon", "Paris", 0.0), (r"\boxed{7}", "7", 1.0)],
)
async def test_reference_match_chat_completion_scores_like_its_text_twin(
    final: str, reference: str, expected: float
) -> None:
    as_chat = await score("reference_match", chat(final), reference)
    as_text = await score("reference_match", final, reference)
    assert as_chat == as_text == expected


async def test_reference_match_chat_answer_is_the_last_assistant_message() -> None:
    # The tool result mentions Paris; only the assistant's final answer counts.
    assert await score("reference_match", chat("Lyon"), "Paris") == 0.0


async def test_reference_match_plain_dict_messages_score_like_wire_messages() -> None:
    direct = Sample(id="d", prompt="q", completion=chat("Paris"), reference="paris")
    result = await judge("reference_match").score(direct, JudgeContext())
    assert result.score == 1.0


@pytest.mark.parametrize("reference", [None, "", []])
async def test_reference_match_without_reference_is_not_scorable(reference: Any) -> None:
    with pytest.raises(SampleNotScorable):
        await judge("reference_match").score(sample("Paris", reference), JudgeContext())


# --- numeric_match -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "reference", "options", "expected"),
    [
        ("42", "42", {}, 1.0),
        ("42.0", "42", {}, 1.0),
        ("43", "42", {}, 0.0),
        ("1,234.5", "1234.5", {}, 1.0),
        ("The total is $1,234.50", "1234.5", {}, 1.0),
        ("#### 1,000,000", "1e6", {}, 1.0),
        ("3.14", "3.14159", {}, 0.0),
        ("3.14", "3.14159", {"abs_tol": 0.01}, 1.0),
        ("3.10", "3.14159", {"abs_tol": 0.01}, 0.0),
        ("105", "100", {"rel_tol": 0.05}, 1.0),
        ("95", "100", {"rel_tol": 0.05}, 1.0),
        ("106", "100", {"rel_tol": 0.05}, 0.0),
        ("-2.5", "-2.5", {}, 1.0),
        ("-2.5", "2.5", {}, 0.0),
        ("I tried 7 then 9.\nThe answer is 12", "12", {}, 1.0),
    ],
)
async def test_numeric_match_tolerances(
    completion: str, reference: str, options: dict[str, float], expected: float
) -> None:
    assert await score("numeric_match", completion, reference, **options) == expected


async def test_numeric_match_list_of_references() -> None:
    assert await score("numeric_match", "7", ["6", "7"]) == 1.0
    assert await score("numeric_match", "8", ["6", "7"]) == 0.0


async def test_numeric_match_no_number_scores_zero() -> None:
    assert await score("numeric_match", "I do not know", "3") == 0.0


async def test_numeric_match_chat_completion_scores_like_its_text_twin() -> None:
    assert await score("numeric_match", chat("#### 1,234.5"), "1234.5") == 1.0
    assert await score("numeric_match", chat("#### 12"), "1234.5") == 0.0


async def test_numeric_match_without_reference_is_not_scorable() -> None:
    with pytest.raises(SampleNotScorable):
        await judge("numeric_match").score(sample("42", None), JudgeContext())


@pytest.mark.parametrize("options", [{"abs_tol": -1}, {"rel_tol": -0.1}])
def test_numeric_match_bad_options_raise_value_error(options: dict[str, float]) -> None:
    cls = Registry().load("judges", "numeric_match")
    with pytest.raises(ValueError):
        cls(**options)
    with pytest.raises(PluginError):  # the registry turns it into a plugin error
        Registry().create("judges", "numeric_match", **options)


# --- regex_match -------------------------------------------------------------------------


async def test_regex_match_search_finds_a_pattern_anywhere() -> None:
    assert await score("regex_match", "the code is 1234, done", pattern=r"\d{4}") == 1.0
    assert await score("regex_match", "no digits here", pattern=r"\d{4}") == 0.0


async def test_regex_match_fullmatch_needs_the_whole_answer() -> None:
    opts = {"pattern": r"\d{4}", "mode": "fullmatch"}
    assert await score("regex_match", "1234", **opts) == 1.0
    assert await score("regex_match", "  1234\n", **opts) == 1.0
    assert await score("regex_match", "code 1234", **opts) == 0.0


async def test_regex_match_ignore_case() -> None:
    assert await score("regex_match", "Refund APPROVED", pattern="approved") == 0.0
    assert (
        await score("regex_match", "Refund APPROVED", pattern="approved", ignore_case=True) == 1.0
    )


async def test_regex_match_target_transcript_sees_tool_calls() -> None:
    completion = chat("Paris")
    # The tool call is in the transcript, not in the final answer.
    assert await score("regex_match", completion, pattern=r"lookup") == 0.0
    assert await score("regex_match", completion, pattern=r"lookup", target="transcript") == 1.0
    assert await score("regex_match", completion, pattern=r"Paris", target="answer") == 1.0


async def test_regex_match_needs_no_reference() -> None:
    assert await score("regex_match", "ok", None, pattern="ok") == 1.0


@pytest.mark.parametrize(
    "options",
    [
        {"pattern": "("},
        {"pattern": "[a-"},
        {"pattern": "x", "mode": "match"},
        {"pattern": "x", "target": "prompt"},
    ],
)
def test_regex_match_invalid_options_raise_value_error(options: dict[str, str]) -> None:
    cls = Registry().load("judges", "regex_match")
    with pytest.raises(ValueError):
        cls(**options)
    with pytest.raises(PluginError):
        Registry().create("judges", "regex_match", **options)


def test_regex_match_requires_a_pattern() -> None:
    with pytest.raises(PluginError):
        Registry().create("judges", "regex_match")
