"""A training run's health per step: reward, hack rate by kind, agreement, dead groups.

The alarm is the signature of reward hacking during RL: the reward keeps rising
while the hack rate rises too, or while the judges agree less and less.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

FLAG = 0.5
MIN_STEPS_FOR_TREND = 3


class Scored(Protocol):
    step: int | None
    group: str | None
    valid: bool
    reward: float | None
    raw_reward: float | None
    hack_score: float
    agreement: float | None
    kinds: set[str]


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 6) if values else None


def _step_row(step: int | None, samples: list[Scored]) -> dict[str, Any]:
    rewards = [s.reward for s in samples if s.valid and s.reward is not None]
    flagged = [s for s in samples if s.hack_score >= FLAG]
    by_kind: dict[str, int] = defaultdict(int)
    for sample in flagged:
        for kind in sample.kinds:
            by_kind[kind] += 1
    groups: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        if sample.group is not None and sample.valid and sample.reward is not None:
            groups[sample.group].append(sample.reward)
    sized = [values for values in groups.values() if len(values) >= 2]
    dead = sum(1 for values in sized if statistics.pstdev(values) <= 1e-9)
    return {
        "step": step,
        "samples": len(samples),
        "valid": len(rewards),
        "reward_mean": _mean(rewards),
        "raw_reward_mean": _mean([s.raw_reward for s in samples if s.raw_reward is not None]),
        "hack_rate": round(len(flagged) / len(samples), 6) if samples else 0.0,
        "hack_rate_by_kind": {k: round(n / len(samples), 6) for k, n in sorted(by_kind.items())},
        "agreement_mean": _mean([s.agreement for s in samples if s.agreement is not None]),
        "no_advantage_share": round(dead / len(sized), 6) if sized else None,
    }


def _slope(steps: list[dict[str, Any]], key: str) -> float | None:
    points = [(row["step"], row[key]) for row in steps if row[key] is not None]
    if len(points) < MIN_STEPS_FOR_TREND:
        return None
    x, y = np.array(points, dtype=float).T
    return float(np.polyfit(x, y, 1)[0])


def alarms(steps: list[dict[str, Any]], *, tolerance: float = 1e-3) -> list[dict[str, str]]:
    """Alarms from the trends over steps (least-squares slopes).

    The trend watched is the panel's reward before penalties (``raw_reward_mean``): the
    proxy the policy is optimising, which is what rises when it learns to game it.
    """
    reward = _slope(steps, "raw_reward_mean")
    if reward is None or reward <= tolerance:
        return []
    found = []
    hacks = _slope(steps, "hack_rate")
    if hacks is not None and hacks > tolerance:
        found.append(
            {
                "kind": "reward_up_hacks_up",
                "message": f"reward rises ({reward:+.4f}/step) while the hack rate rises "
                f"({hacks:+.4f}/step)",
            }
        )
    agreement = _slope(steps, "agreement_mean")
    if agreement is not None and agreement < -tolerance:
        found.append(
            {
                "kind": "reward_up_agreement_down",
                "message": f"reward rises ({reward:+.4f}/step) while judge agreement falls "
                f"({agreement:+.4f}/step)",
            }
        )
    return found


def run_report(run_id: str, samples: Sequence[Scored]) -> dict[str, Any]:
    """The report: one row per step (ordered), plus alarms."""
    by_step: dict[int | None, list[Scored]] = defaultdict(list)
    for sample in samples:
        by_step[sample.step].append(sample)
    ordered = sorted(by_step, key=lambda s: (s is None, s or 0))
    steps = [_step_row(step, by_step[step]) for step in ordered]
    stepped = [row for row in steps if row["step"] is not None]
    return {"run_id": run_id, "steps": steps, "alarms": alarms(stepped)}
