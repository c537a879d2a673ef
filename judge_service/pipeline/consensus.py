"""Turning a panel's verdicts into one reward, or a masked outcome below quorum."""

from __future__ import annotations

import math
from dataclasses import dataclass

from judge_service.contracts import Aggregator
from judge_service.domain import Outcome, Verdict, total_usage
from judge_service.pipeline.judging import PanelMember


@dataclass(frozen=True)
class Panel:
    """A list of judges plus an aggregator and the quorum of valid verdicts it needs."""

    members: list[PanelMember]
    aggregator: Aggregator
    quorum: int

    @staticmethod
    def default_quorum(size: int) -> int:
        """Half the panel, rounded up (at least one)."""
        return max(1, math.ceil(size / 2))


def agreement(scores: list[float], weights: list[float]) -> float:
    """1 minus twice the weighted standard deviation: 1 is unanimous, 0 a split 0/1 panel."""
    total = sum(weights)
    if len(scores) < 2 or total <= 0:
        return 1.0
    mean = sum(s * w for s, w in zip(scores, weights, strict=True)) / total
    variance = sum(w * (s - mean) ** 2 for s, w in zip(scores, weights, strict=True)) / total
    return max(0.0, 1.0 - 2.0 * math.sqrt(variance))


def decide(sample_id: str, verdicts: list[Verdict], panel: Panel) -> Outcome:
    """The consensus reward, or a masked outcome saying why there is none."""
    ok = [v for v in verdicts if v.ok and v.weight > 0]
    usage = total_usage(verdicts)
    if len(ok) < panel.quorum:
        timed_out = any(v.timed_out for v in verdicts)
        if timed_out:
            kind, why = "timeout", "the batch deadline passed before the panel answered"
        elif verdicts and all(v.not_scorable for v in verdicts if not v.ok) and not ok:
            kind, why = "bad_sample", "; ".join(f"{v.judge}: {v.error}" for v in verdicts)
        elif not any(v.ok for v in verdicts):
            kind, why = "judge_failed", "; ".join(f"{v.judge}: {v.error}" for v in verdicts)
        else:
            kind = "below_quorum"
            why = f"{len(ok)} valid verdicts, quorum is {panel.quorum}"
        outcome = Outcome.masked(sample_id, kind, why[:2000], verdicts)
        return outcome.model_copy(update={"usage": usage})
    scores = [float(v.score) for v in ok]  # type: ignore[arg-type]  # ok: score is set
    weights = [v.weight for v in ok]
    reward = min(1.0, max(0.0, panel.aggregator.aggregate(scores, weights)))
    components: dict[str, float] = {}
    for verdict, score in zip(ok, scores, strict=True):
        components["judge/" + verdict.judge] = score
        if verdict.components:
            components.update(verdict.components)
    return Outcome(
        id=sample_id,
        reward=reward,
        raw_reward=reward,
        valid=True,
        components=components,
        judges=verdicts,
        agreement=agreement(scores, weights),
        usage=usage,
    )
