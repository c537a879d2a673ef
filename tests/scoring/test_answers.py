"""A done batch's answer, written straight from its outcomes, is the wire contract's JSON."""

from __future__ import annotations

import json

import pytest

from judge_service import wire
from judge_service.domain import CallUsage, Finding, Outcome, Verdict
from judge_service.scoring.web_answers import done_response


def outcomes() -> list[Outcome]:
    usage = CallUsage(
        judge_calls=2, cache_hits=1, prompt_tokens=30, completion_tokens=4, cost_usd=0.5
    )
    good = Verdict(
        judge="openai/judge-a",
        weight=2.0,
        score=0.8,
        rationale="fine \u202e🚀",
        components={"rubric/cites": 1.0},
        usage=usage,
    )
    late = Verdict(judge="slow", error="timeout", timed_out=True)
    return [
        Outcome(
            id="flagged",
            reward=0.2,
            raw_reward=0.8,
            penalty=0.6,
            hack_score=0.93,
            valid=True,
            components={"judge/openai/judge-a": 0.8, "rubric/cites": 1.0},
            judges=[good, late],
            agreement=1.0,
            findings=[
                Finding(
                    detector="test_tampering",
                    kind="edited_tests",
                    severity="high",
                    confidence=0.97,
                    evidence="- assert x == 1",
                    basis="tool",
                    fact="message 2 tool call 1 `edit_file`",
                    narration="message 1: `I won't touch the test` (refusal, contradicts)",
                    covers=["neutered_asserts"],
                )
            ],
            usage=usage,
        ),
        Outcome.masked("late", "timeout", "the batch deadline passed", [late]),
        Outcome(id="plain", reward=0.5, raw_reward=0.5, valid=True, agreement=None),
    ]


def wire_answer(items: list[Outcome]) -> wire.RewardResponse:
    """The same answer built the slow way, through the wire models."""
    return wire.RewardResponse(
        batch_id="b1",
        status="done",
        rubric="policy@2",
        run_id="run",
        step=4,
        progress=wire.Progress(scored=len(items), total=len(items)),
        results=[wire.SampleResult.model_validate(o, from_attributes=True) for o in items],
        groups={"g": wire.GroupStats(reward_std=0.15, has_advantage=True)},
        usage=wire.Usage(
            judge_calls=2, cache_hits=1, prompt_tokens=30, completion_tokens=4, cost_usd=0.5
        ),
    )


@pytest.mark.parametrize("compact", [False, True])
def test_the_answer_written_from_outcomes_is_the_wire_models_json(compact: bool) -> None:
    items = outcomes()
    answer = done_response(
        batch_id="b1",
        rubric="policy@2",
        run_id="run",
        step=4,
        outcomes=items,
        group_ids=["g", None, "g"],
    )
    expected = wire_answer(items).to_json(compact=compact)
    assert answer.to_json(compact=compact) == expected  # the same bytes, not only equal JSON
    parsed = wire.RewardResponse.model_validate_json(answer.to_json(compact=compact))
    assert [r.reward for r in parsed.results] == [0.2, None, 0.5]
    first = json.loads(answer.to_json(compact=compact))["results"][0]
    if compact:
        assert "judges" not in first and "components" not in first
        assert first["findings"][0]["kind"] == "edited_tests"
    else:
        assert first["judges"][1] == {
            "judge": "slow",
            "score": None,
            "rationale": None,
            "error": "timeout",
        }
        assert "usage" not in first and "weight" not in first["judges"][0]
