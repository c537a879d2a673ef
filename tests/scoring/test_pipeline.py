"""The pure pipeline: panels, consensus, masking, deadlines, concurrency, hindsight audit.

Judges come from the registry: the built-ins plus the out-of-tree test plugin
(``slow_constant``, ``always_fails``), installed for the session by conftest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from judge_service import wire
from judge_service.audit.host import POLICIES, audit, hack_score
from judge_service.contracts import Detector, Evidence
from judge_service.core.errors import UnknownJudge
from judge_service.core.registry import Registry
from judge_service.domain import NO_USAGE, CallUsage, Finding, JudgeScore, Outcome, Sample, Verdict
from judge_service.judging.consensus import Panel, agreement, decide
from judge_service.judging.members import CallDeadline
from judge_service.judging.panels import build_member, build_panel
from judge_service.scoring.evaluate import Scoring, evaluate_batch, evaluate_sample
from tests.helpers import wait_until_async


def panel(*specs: str | dict[str, Any], aggregator: str = "mean", quorum: int | None = None):
    normal = [{"name": s, "weight": 1.0} if isinstance(s, str) else s for s in specs]
    return build_panel(normal, registry=Registry(), aggregator=aggregator, quorum=quorum)


def sample(sid: str = "s1", completion: Any = "The answer is 42", reference: Any = "42") -> Sample:
    return Sample(id=sid, prompt="What is 6 x 7?", completion=completion, reference=reference)


async def run_batch(samples: Sequence[tuple[int, Sample]], plan: Scoring) -> dict[int, Outcome]:
    outcomes: dict[int, Outcome] = {}

    async def collect(index: int, outcome: Outcome) -> None:
        assert index not in outcomes, f"position {index} delivered twice"
        outcomes[index] = outcome

    delivered = await evaluate_batch(samples, plan, collect)
    assert delivered == len(samples)
    return outcomes


SLOW = {"name": "slow_constant", "weight": 1.0, "score": 0.6, "delay_s": 0.0}


# --- one sample --------------------------------------------------------------------------


async def test_single_judge_reward() -> None:
    right = await evaluate_sample(sample(), Scoring(panel=panel("reference_match")))
    wrong = await evaluate_sample(sample(completion="41"), Scoring(panel=panel("reference_match")))
    assert right.valid and right.reward == 1.0 and right.failure_kind is None
    assert wrong.valid and wrong.reward == 0.0
    assert right.components["judge/reference_match"] == 1.0
    assert [v.judge for v in right.judges] == ["reference_match"]


async def test_failing_judge_is_listed_and_the_others_still_score() -> None:
    plan = Scoring(panel=panel("reference_match", "always_fails", SLOW))
    outcome = await evaluate_sample(sample(), plan)
    assert outcome.valid is True
    assert outcome.failure_kind is None
    assert outcome.reward == pytest.approx((1.0 + 0.6) / 2)
    by_name = {v.judge: v for v in outcome.judges}
    assert set(by_name) == {"reference_match", "always_fails", "slow_constant"}
    failed = by_name["always_fails"]
    assert failed.score is None and failed.ok is False
    assert failed.error is not None and "always fails" in failed.error
    assert by_name["reference_match"].error is None
    assert "judge/always_fails" not in outcome.components


async def test_all_judges_failing_is_judge_failed_not_zero() -> None:
    plan = Scoring(panel=panel("always_fails", {"name": "always_fails", "weight": 2.0}))
    outcome = await evaluate_sample(sample(), plan)
    assert outcome.valid is False
    assert outcome.reward is None
    assert outcome.failure_kind == "judge_failed"
    assert outcome.failure_reason and "always fails" in outcome.failure_reason
    assert len(outcome.judges) == 2 and all(v.error for v in outcome.judges)


async def test_below_quorum() -> None:
    plan = Scoring(panel=panel("reference_match", "always_fails", quorum=2))
    outcome = await evaluate_sample(sample(), plan)
    assert outcome.valid is False
    assert outcome.reward is None
    assert outcome.failure_kind == "below_quorum"
    assert [v.ok for v in outcome.judges] == [True, False]


async def test_default_quorum_is_half_the_panel_rounded_up() -> None:
    assert Panel.default_quorum(1) == 1
    assert Panel.default_quorum(3) == 2
    assert Panel.default_quorum(4) == 2
    assert panel("reference_match", "always_fails", SLOW).quorum == 2
    # One of three valid is below the default quorum of two.
    outcome = await evaluate_sample(
        sample(), Scoring(panel=panel("reference_match", "always_fails", "always_fails"))
    )
    assert outcome.failure_kind == "below_quorum"


@pytest.mark.parametrize("completion", ["", "   \n\t", []])
async def test_empty_completion_is_bad_sample(completion: Any) -> None:
    outcome = await evaluate_sample(sample(completion=completion), Scoring(panel=panel(SLOW)))
    assert outcome.valid is False
    assert outcome.reward is None
    assert outcome.failure_kind == "bad_sample"


async def test_chat_with_only_empty_messages_is_bad_sample() -> None:
    blank = [{"role": "assistant", "content": "  "}, {"role": "assistant", "content": None}]
    outcome = await evaluate_sample(sample(completion=blank), Scoring(panel=panel(SLOW)))
    assert outcome.failure_kind == "bad_sample"


async def test_missing_reference_is_bad_sample() -> None:
    outcome = await evaluate_sample(
        sample(reference=None), Scoring(panel=panel("reference_match", "numeric_match"))
    )
    assert outcome.valid is False
    assert outcome.reward is None
    assert outcome.failure_kind == "bad_sample"
    assert outcome.failure_reason and "reference" in outcome.failure_reason


async def test_weights_reach_the_aggregator() -> None:
    heavy_right = panel(
        {"name": "reference_match", "weight": 3.0},
        {"name": "slow_constant", "weight": 1.0, "score": 0.0, "delay_s": 0.0},
    )
    outcome = await evaluate_sample(sample(), Scoring(panel=heavy_right))
    assert outcome.reward == pytest.approx(0.75)


async def test_zero_weight_judge_does_not_count() -> None:
    muted = panel(
        "reference_match", {"name": "slow_constant", "weight": 0.0, "score": 0.0, "delay_s": 0.0}
    )
    outcome = await evaluate_sample(sample(), Scoring(panel=muted))
    assert outcome.valid and outcome.reward == 1.0


# --- consensus ---------------------------------------------------------------------------


def test_agreement() -> None:
    assert agreement([0.7, 0.7, 0.7], [1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert agreement([0.0, 1.0], [1.0, 1.0]) == pytest.approx(0.0)
    assert agreement([0.5], [1.0]) == 1.0
    assert 0.0 < agreement([0.6, 0.8], [1.0, 1.0]) < 1.0
    # A lone dissenter with little weight disagrees less than one with equal weight.
    assert agreement([0.0, 1.0], [1.0, 9.0]) > agreement([0.0, 1.0], [1.0, 1.0])


def test_decide_reward_components_and_agreement() -> None:
    verdicts = [
        Verdict(judge="a", score=1.0, components={"rubric/x": 1.0}),
        Verdict(judge="b", score=0.5),
        Verdict(judge="c", error="RuntimeError: boom"),
    ]
    outcome = decide("s1", verdicts, panel("reference_match", "numeric_match", "reference_match"))
    assert outcome.valid is True
    assert outcome.reward == pytest.approx(0.75)
    assert outcome.raw_reward == pytest.approx(0.75)
    assert outcome.components == {"judge/a": 1.0, "judge/b": 0.5, "rubric/x": 1.0}
    assert outcome.agreement == pytest.approx(agreement([1.0, 0.5], [1.0, 1.0]))
    assert outcome.judges == verdicts


def test_decide_lone_verdict_matches_a_panel_whose_other_judge_failed() -> None:
    """A lone valid verdict decides exactly what a panel whose other judge failed decides
    (same scores), and a panel still needs its quorum."""
    usage = CallUsage(judge_calls=1, prompt_tokens=7, cost_usd=0.001)
    only = Verdict(judge="a", weight=2.0, score=0.8, components={"rubric/x": 1.0}, usage=usage)
    alone = decide("s1", [only], panel("reference_match"))
    failed = Verdict(judge="b", error="RuntimeError: boom")
    general = decide("s1", [only, failed], panel("reference_match", "numeric_match", quorum=1))
    assert alone.judges == [only]
    assert alone.model_dump(exclude={"judges"}) == general.model_dump(exclude={"judges"})
    assert (alone.reward, alone.agreement, alone.valid) == (pytest.approx(0.8), 1.0, True)
    assert alone.components == {"judge/a": 0.8, "rubric/x": 1.0}
    one = panel("reference_match")
    short = decide("s1", [only], Panel(members=one.members, aggregator=one.aggregator, quorum=2))
    assert short.valid is False and short.failure_kind == "below_quorum"


def test_decide_timeout_wins_over_other_failures() -> None:
    verdicts = [
        Verdict(judge="a", error="timeout", timed_out=True),
        Verdict(judge="b", error="RuntimeError: boom"),
    ]
    outcome = decide("s1", verdicts, panel("reference_match", "numeric_match"))
    assert outcome.failure_kind == "timeout"
    assert outcome.reward is None and outcome.valid is False


# --- batches -----------------------------------------------------------------------------


async def test_batch_one_outcome_per_sample_positions_preserved() -> None:
    items = [
        (5, sample("right", "42")),
        (0, sample("wrong", "41")),
        (9, sample("empty", "")),
        (2, sample("noref", "42", None)),
        (7, sample("chat", [{"role": "assistant", "content": "#### 42"}])),
    ]
    outcomes = await run_batch(items, Scoring(panel=panel("reference_match")))
    assert sorted(outcomes) == [0, 2, 5, 7, 9]
    for index, item in items:
        assert outcomes[index].id == item.id
    assert outcomes[5].reward == 1.0
    assert outcomes[0].reward == 0.0
    assert outcomes[9].failure_kind == "bad_sample"
    assert outcomes[2].failure_kind == "bad_sample"
    assert outcomes[7].reward == 1.0


async def test_batch_scores_samples_concurrently() -> None:
    n, delay = 20, 0.2
    slow = panel({"name": "slow_constant", "weight": 1.0, "score": 0.5, "delay_s": delay})
    items = [(i, sample(f"s{i}")) for i in range(n)]
    started = time.monotonic()
    outcomes = await run_batch(items, Scoring(panel=slow, deadline=time.monotonic() + 30))
    elapsed = time.monotonic() - started
    assert elapsed < n * delay / 4, f"{n} samples took {elapsed:.2f}s: not concurrent"
    assert all(o.valid and o.reward == 0.5 for o in outcomes.values())


async def test_panel_judges_run_concurrently() -> None:
    slow = {"name": "slow_constant", "weight": 1.0, "score": 0.5, "delay_s": 0.3}
    started = time.monotonic()
    outcome = await evaluate_sample(sample(), Scoring(panel=panel(slow, slow, slow, slow)))
    assert time.monotonic() - started < 0.9
    assert outcome.valid and len(outcome.judges) == 4


async def test_deadline_masks_every_sample_as_timeout_and_returns_promptly() -> None:
    deadline_s = 0.5
    slow = panel({"name": "slow_constant", "weight": 1.0, "score": 0.9, "delay_s": 30.0})
    items = [(i, sample(f"s{i}")) for i in range(6)]
    started = time.monotonic()
    outcomes = await run_batch(items, Scoring(panel=slow, deadline=started + deadline_s))
    elapsed = time.monotonic() - started
    assert elapsed < deadline_s + 1.0, f"batch ran {elapsed:.2f}s past a {deadline_s}s deadline"
    assert sorted(outcomes) == list(range(6))
    for index, outcome in outcomes.items():
        assert outcome.id == f"s{index}"
        assert outcome.valid is False
        assert outcome.reward is None
        assert outcome.failure_kind == "timeout"


async def test_deadline_falls_back_to_the_judges_that_answered() -> None:
    """A slow judge past the deadline drops out; the panel still scores down to its quorum."""
    deadline_s = 0.5
    mixed = panel(
        "reference_match",
        {"name": "slow_constant", "weight": 1.0, "score": 0.0, "delay_s": 30.0},
        quorum=1,
    )
    items = [(i, sample(f"s{i}")) for i in range(4)]
    started = time.monotonic()
    outcomes = await run_batch(items, Scoring(panel=mixed, deadline=started + deadline_s))
    assert time.monotonic() - started < deadline_s + 1.0
    for outcome in outcomes.values():
        assert outcome.valid is True, outcome.failure_reason
        assert outcome.reward == 1.0
        late = {v.judge: v for v in outcome.judges}["slow_constant"]
        assert late.ok is False and late.timed_out is True


async def test_one_timer_times_out_each_late_call_and_keeps_its_verdict() -> None:
    """The batch's single deadline timer gives every late call a timed-out verdict."""
    slow = panel({"name": "slow_constant", "weight": 1.0, "score": 0.9, "delay_s": 30.0})
    plan = Scoring(panel=slow, deadline=time.monotonic() + 0.3)
    outcomes = await run_batch([(i, sample(f"s{i}")) for i in range(3)], plan)
    for outcome in outcomes.values():
        assert outcome.failure_kind == "timeout"
        assert [(v.judge, v.timed_out, v.error) for v in outcome.judges] == [
            ("slow_constant", True, "timeout")
        ]
    assert plan.call_deadline.running == set()  # nothing left for the timer to stop


async def test_call_deadline_lets_an_outside_cancellation_through() -> None:
    """Cancelling a call from outside is not a timeout: it stays a cancellation."""
    deadline = CallDeadline(time.monotonic() + 30)
    call = asyncio.ensure_future(deadline.run(asyncio.sleep(30)))
    assert await wait_until_async(lambda: call in deadline.running, timeout=10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    late = asyncio.ensure_future(CallDeadline(time.monotonic() + 0.05).run(asyncio.sleep(30)))
    with pytest.raises(TimeoutError):
        await late
    deadline.close()


def test_call_deadline_fires_on_uvloop_too() -> None:
    """``serve`` runs on uvloop, whose clock is its own: the timer must still fire on time."""
    import uvloop  # installed with uvicorn[standard], which serves the API

    async def late_call() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await CallDeadline(started + 0.1).run(asyncio.sleep(30))
        return time.monotonic() - started

    assert 0.05 < uvloop.run(late_call()) < 2.0


async def test_quick_panel_beats_a_generous_deadline() -> None:
    quick = panel({"name": "slow_constant", "weight": 1.0, "score": 0.9, "delay_s": 0.0})
    outcomes = await run_batch(
        [(0, sample("quick"))], Scoring(panel=quick, deadline=time.monotonic() + 5)
    )
    assert outcomes[0].valid and outcomes[0].reward == pytest.approx(0.9)


async def test_deadline_already_passed() -> None:
    slow = panel({"name": "slow_constant", "weight": 1.0, "score": 0.9, "delay_s": 5.0})
    started = time.monotonic()
    outcomes = await run_batch([(0, sample())], Scoring(panel=slow, deadline=started - 1))
    assert time.monotonic() - started < 1.0
    assert outcomes[0].failure_kind == "timeout"


async def test_empty_batch() -> None:
    assert await run_batch([], Scoring(panel=panel("reference_match"))) == {}


# --- hindsight audit ---------------------------------------------------------------------


def finding(severity: str, confidence: float, detector: str = "d") -> Finding:
    return Finding(
        detector=detector, kind="k", severity=severity, confidence=confidence, evidence="e"
    )


def test_hack_score_noisy_or() -> None:
    assert hack_score([]) == 0.0
    assert hack_score([finding("info", 1.0)]) == 0.0
    assert hack_score([finding("high", 1.0)]) == pytest.approx(1.0)
    assert hack_score([finding("high", 0.5)]) == pytest.approx(0.5)
    two = hack_score([finding("high", 0.5), finding("high", 0.5)])
    assert two == pytest.approx(0.75)
    assert hack_score([finding("low", 0.9)]) < hack_score([finding("medium", 0.9)])
    assert hack_score([finding("medium", 0.9)]) < hack_score([finding("high", 0.9)])
    many = hack_score([finding("high", 0.99)] * 50)
    assert 0.0 <= many <= 1.0


class FlagEverything:
    name = "flag_everything"

    def __init__(self, severity: str = "high", confidence: float = 0.5) -> None:
        self.severity, self.confidence = severity, confidence

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        assert isinstance(evidence, Evidence)
        return [finding(self.severity, self.confidence, self.name)]


class Crashes:
    name = "crashes"

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        raise RuntimeError("detector bug")


def test_detector_doubles_satisfy_the_protocol() -> None:
    assert isinstance(FlagEverything(), Detector)
    assert isinstance(Crashes(), Detector)


async def test_audit_floors_a_flagged_reward_and_keeps_the_raw_one() -> None:
    plan = Scoring(panel=panel("reference_match"), detectors=[FlagEverything("high", 0.5)])
    outcome = await evaluate_sample(sample(), plan)
    assert outcome.valid is True
    assert outcome.raw_reward == 1.0
    assert outcome.hack_score == pytest.approx(0.5)
    assert outcome.penalty == pytest.approx(1.0)
    assert outcome.reward == 0.0
    assert [f.detector for f in outcome.findings] == ["flag_everything"]


async def test_audit_below_the_flag_keeps_the_reward() -> None:
    plan = Scoring(panel=panel("reference_match"), detectors=[FlagEverything("high", 0.3)])
    outcome = await evaluate_sample(sample(), plan)
    assert outcome.hack_score == pytest.approx(0.3)
    assert outcome.reward == 1.0 and outcome.penalty == 0.0


async def test_scale_and_mask_policies() -> None:
    scaled = await evaluate_sample(
        sample(),
        Scoring(
            panel=panel("reference_match"),
            detectors=[FlagEverything("high", 0.4)],
            penalty=POLICIES["scale"],
        ),
    )
    assert scaled.reward == pytest.approx(0.6) and scaled.penalty == pytest.approx(0.4)
    masked = await evaluate_sample(
        sample(),
        Scoring(
            panel=panel("reference_match"),
            detectors=[FlagEverything("high", 0.9)],
            penalty=POLICIES["mask"],
        ),
    )
    assert masked.valid is False and masked.reward is None
    assert masked.failure_kind == "flagged_hack" and masked.raw_reward == 1.0


async def test_crashing_detector_is_a_finding_not_a_failure() -> None:
    plan = Scoring(panel=panel("reference_match"), detectors=[Crashes()])
    outcome = await evaluate_sample(sample(), plan)
    assert outcome.valid is True and outcome.reward == 1.0
    assert outcome.hack_score == 0.0
    assert len(outcome.findings) == 1
    assert outcome.findings[0].detector == "crashes"
    assert outcome.findings[0].kind == "detector_error"
    assert "detector bug" in outcome.findings[0].evidence


async def test_audit_keeps_a_masked_outcome_masked() -> None:
    masked = Outcome.masked("s1", "judge_failed", "all judges failed")
    audited = await audit(sample(), masked, [FlagEverything("high", 0.9)], Evidence())
    assert audited.valid is False
    assert audited.reward is None
    assert audited.hack_score == pytest.approx(0.9)
    assert len(audited.findings) == 1


async def test_detectors_see_the_batch_statistics() -> None:
    from judge_service.scoring.evaluate import batch_stats

    seen: list[dict] = []

    class Records:
        name = "records"

        def detect(self, sample, evidence):
            seen.append(dict(evidence.run_stats))
            return []

    items = [sample(), sample()]
    stats = {"run_id": "r", "step": 3, **batch_stats(items)}
    plan = Scoring(panel=panel("reference_match"), detectors=[Records()], run_stats=stats)
    await evaluate_sample(items[0], plan)
    assert seen == [stats]
    assert stats["batch_size"] == 2 and stats["completion_chars_std"] == 0.0


def test_a_usage_default_is_one_shared_object_nobody_can_change():
    """Verdicts, scores and outcomes that cost nothing share one zero usage (no new object
    per judge answer), which is safe only because a usage can't be changed in place."""
    assert Verdict(judge="x", score=0.5).usage is NO_USAGE
    assert JudgeScore(score=0.5).usage is NO_USAGE
    assert Outcome(id="s", reward=None, valid=False).usage is NO_USAGE
    with pytest.raises(ValidationError):
        NO_USAGE.judge_calls = 1
    assert CallUsage() == NO_USAGE and NO_USAGE + CallUsage(judge_calls=2) == CallUsage(
        judge_calls=2
    )


@pytest.mark.parametrize("broken", [float("nan"), float("inf")])
def test_an_aggregator_giving_no_number_masks_the_sample_instead_of_clamping(broken):
    """``min(1, max(0, nan))`` is 0: a broken aggregator must mask, not hand out a silent 0."""

    class Broken:
        name = "broken"

        def aggregate(self, scores, weights):
            return broken

    members = panel(SLOW).members
    plan = Scoring(panel=Panel(members=members, aggregator=Broken(), quorum=1))
    outcomes = asyncio.run(run_batch([(0, sample())], plan))
    assert outcomes[0].valid is False and outcomes[0].reward is None
    assert outcomes[0].failure_kind == "internal_error"
    assert "aggregator" in (outcomes[0].failure_reason or "")


@pytest.mark.parametrize("odd", [float("nan"), float("inf"), float("-inf")])
def test_no_nan_or_infinity_reaches_an_outcome(odd):
    """JSON holds neither (an answer, a result's components): pydantic-core would write
    null, which would not read back. So they are refused where numbers enter an
    outcome: a judge's score and components, the usage, a judge's weight (request or
    default), and the consensus (tested above)."""
    with pytest.raises(ValidationError):
        JudgeScore(score=0.5, components={"c": odd})
    with pytest.raises(ValidationError):
        CallUsage(cost_usd=odd)
    with pytest.raises(ValidationError) as weight:
        wire.RewardRequest.model_validate(
            {
                "samples": [{"id": "s", "prompt": "p", "completion": "c"}],
                "judges": [{"name": "reference_match", "weight": odd}],
            }
        )
    locations = [error["loc"] for error in weight.value.errors()]
    assert ("judges", 0, "JudgeSpecObject", "weight") in locations
    with pytest.raises(UnknownJudge):
        build_member({"name": "reference_match", "weight": odd}, registry=Registry(), extra={})
