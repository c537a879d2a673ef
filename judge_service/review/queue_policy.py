"""Which scored rollouts deserve a human look: suspected hacks and split panels.

A policy is a small value object, so a caller can tighten or loosen it without flags spread
through the worker. Items are capped per batch, most urgent first, so a bad step of a large
run cannot bury the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judge_service.domain import Outcome

Kind = Literal["hack_finding", "disagreement"]


@dataclass(frozen=True)
class QueuePolicy:
    """``flagged``: hack_score at which a rollout counts as a suspected hack.
    ``uncertain``: lower edge of the band below it where the audit is unsure (also queued).
    ``disagreement``: panel agreement under which the judges are considered split.
    ``per_batch``: most items of each kind queued from one batch."""

    flagged: float = 0.5
    uncertain: float = 0.3
    disagreement: float = 0.5
    per_batch: int = 25


@dataclass(frozen=True)
class Candidate:
    """An item to queue for the rollout at ``position``."""

    position: int
    kind: Kind
    priority: float
    payload: dict[str, Any]


def hack_candidate(position: int, outcome: Outcome, policy: QueuePolicy) -> Candidate | None:
    if outcome.hack_score < policy.uncertain:
        return None
    band = "flagged" if outcome.hack_score >= policy.flagged else "uncertain"
    payload = {
        "band": band,
        "hack_score": outcome.hack_score,
        "reward": outcome.reward,
        "raw_reward": outcome.raw_reward,
        "penalty": outcome.penalty,
        "findings": [f.model_dump(mode="json") for f in outcome.findings if f.severity != "info"],
    }
    return Candidate(position, "hack_finding", outcome.hack_score, payload)


def disagreement_candidate(
    position: int, outcome: Outcome, policy: QueuePolicy
) -> Candidate | None:
    scored = [v for v in outcome.judges if v.ok and v.weight > 0]
    if not outcome.valid or outcome.agreement is None or len(scored) < 2:
        return None
    if outcome.agreement >= policy.disagreement:
        return None
    payload = {
        "agreement": outcome.agreement,
        "reward": outcome.reward,
        "scores": [{"judge": v.judge, "score": v.score} for v in scored],
    }
    return Candidate(position, "disagreement", 1.0 - outcome.agreement, payload)


def select(outcomes: Sequence[tuple[int, Outcome]], policy: QueuePolicy) -> list[Candidate]:
    """The items to queue for a batch's outcomes, at most ``per_batch`` of each kind."""
    chosen: list[Candidate] = []
    for rule in (hack_candidate, disagreement_candidate):
        found = [c for p, o in outcomes if (c := rule(p, o, policy)) is not None]
        found.sort(key=lambda c: (-c.priority, c.position))
        chosen.extend(found[: policy.per_batch])
    return chosen
