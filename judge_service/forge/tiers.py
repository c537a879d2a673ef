"""Difficulty tiers from a training run's own rewards.

GRPO learns nothing from a group whose rollouts all get the same reward, so a task is
``learnable`` only when its rewards spread within a step (mean reward std > 0) and it is
neither always passed nor never passed (pass rate strictly between 0 and 1). Otherwise it is
``too_easy`` (pass rate >= 0.5) or ``too_hard``. A pass is a valid sample with reward >= 0.5;
masked samples count for nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PASS_REWARD = 0.5
TIERS = ("too_easy", "learnable", "too_hard")


@dataclass(frozen=True)
class ScoredSample:
    """One scored rollout: its task (``metadata.task_id``, else ``group_id``), step, reward."""

    task: str
    step: int | None
    valid: bool
    reward: float | None


@dataclass(frozen=True)
class TaskStats:
    task: str
    steps: list[int]
    samples: int
    valid: int
    pass_rate: float | None
    mean_reward: float | None
    reward_std: float | None
    tier: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task,
            "steps": self.steps,
            "samples": self.samples,
            "valid": self.valid,
            "pass_rate": self.pass_rate,
            "mean_reward": self.mean_reward,
            "reward_std": self.reward_std,
            "tier": self.tier,
        }


def tier_of(pass_rate: float, reward_std: float) -> str:
    if reward_std > 0 and 0 < pass_rate < 1:
        return "learnable"
    return "too_easy" if pass_rate >= PASS_REWARD else "too_hard"


def task_stats(samples: Iterable[ScoredSample]) -> list[TaskStats]:
    """Per task, in order of first appearance. A task with no valid sample has no tier."""
    by_task: dict[str, list[ScoredSample]] = {}
    for sample in samples:
        by_task.setdefault(sample.task, []).append(sample)
    stats = []
    for task, rows in by_task.items():
        valid = [r for r in rows if r.valid and r.reward is not None]
        steps = sorted({r.step for r in rows if r.step is not None})
        if not valid:
            stats.append(TaskStats(task, steps, len(rows), 0, None, None, None, None))
            continue
        rewards = [float(r.reward) for r in valid]  # type: ignore[arg-type]
        pass_rate = sum(r >= PASS_REWARD for r in rewards) / len(rewards)
        per_step: dict[int | None, list[float]] = {}
        for r in valid:
            per_step.setdefault(r.step, []).append(float(r.reward))  # type: ignore[arg-type]
        reward_std = statistics.fmean(statistics.pstdev(v) for v in per_step.values())
        stats.append(
            TaskStats(
                task,
                steps,
                len(rows),
                len(valid),
                round(pass_rate, 6),
                round(statistics.fmean(rewards), 6),
                round(reward_std, 6),
                tier_of(pass_rate, reward_std),
            )
        )
    return stats


def tier_shares(samples: Iterable[ScoredSample], stats: Iterable[TaskStats]) -> dict[int, dict]:
    """Per step, the share of the step's tasks in each tier (for the run page)."""
    tier = {s.task: s.tier for s in stats}
    tasks_by_step: dict[int, set[str]] = {}
    for sample in samples:
        if sample.step is not None:
            tasks_by_step.setdefault(sample.step, set()).add(sample.task)
    shares = {}
    for step, tasks in sorted(tasks_by_step.items()):
        shares[step] = {t: sum(tier[k] == t for k in tasks) / len(tasks) for t in TIERS}
    return shares
