"""Turning a panel's verdicts into one reward, or a masked outcome below quorum."""

from __future__ import annotations

import math
from dataclasses import dataclass

from judge_service.contracts import Aggregator
from judge_service.domain import Outcome, Verdict, total_usage
from judge_service.judging.members import PanelMember
from judge_service.wire import FailureKind


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
    if len(scores) < 2:
        return 1.0
    total = sum(weights)
    if total <= 0:
        return 1.0
    mean = sum(s * w for s, w in zip(scores, weights, strict=True)) / total
    variance = sum(w * (s - mean) ** 2 for s, w in zip(scores, weights, strict=True)) / total
    return max(0.0, 1.0 - 2.0 * math.sqrt(variance))


#: ``Outcome``'s validator, called with a dict: no keyword packing in ``BaseModel.__init__``
#: on this per-sample path.
_OUTCOME = Outcome.__pydantic_validator__


def decide(sample_id: str, verdicts: list[Verdict], panel: Panel) -> Outcome:
    """The consensus reward, or a masked outcome saying why there is none.

    Runs once per sample as its judges answer, while a GRPO step's trainer waits, so
    the usual case (enough valid verdicts) takes the shortest way.
    """
    scores: list[float] = []
    weights: list[float] = []
    components: dict[str, float] = {}
    for verdict in verdicts:  # one pass over the valid verdicts: scores, weights, components
        score = verdict.score
        if verdict.error is None and score is not None and verdict.weight > 0:
            scores.append(score)
            weights.append(verdict.weight)
            components["judge/" + verdict.judge] = score
            if verdict.components:
                components.update(verdict.components)
    if len(scores) < panel.quorum:
        return _masked(sample_id, verdicts, len(scores), panel)
    raw = panel.aggregator.aggregate(scores, weights)
    if not math.isfinite(raw):  # masked by the caller, never clamped to a silent 0 or 1
        raise ValueError(f"the aggregator gave {raw} for scores {scores}")
    reward = min(1.0, max(0.0, raw))
    return _OUTCOME.validate_python(
        {
            "id": sample_id,
            "reward": reward,
            "raw_reward": reward,
            "valid": True,
            "components": components,
            "judges": verdicts,
            "agreement": agreement(scores, weights),
            "usage": total_usage(verdicts),
        }
    )


def _masked(sample_id: str, verdicts: list[Verdict], n_valid: int, panel: Panel) -> Outcome:
    """The masked outcome of a sample whose panel fell short of its quorum (``n_valid``
    verdicts with a score and a positive weight)."""
    kind: FailureKind
    if any(v.timed_out for v in verdicts):
        kind, why = "timeout", "the batch deadline passed before the panel answered"
    elif verdicts and all(v.not_scorable for v in verdicts if not v.ok) and n_valid == 0:
        kind, why = "bad_sample", "; ".join(f"{v.judge}: {v.error}" for v in verdicts)
    elif not any(v.ok for v in verdicts):
        kind, why = "judge_failed", "; ".join(f"{v.judge}: {v.error}" for v in verdicts)
    else:
        kind = "below_quorum"
        why = f"{n_valid} valid verdicts, quorum is {panel.quorum}"
    return Outcome.masked(sample_id, kind, why[:2000], verdicts)
