"""``world_end_state``: an episode's verifiable reward, read from its world verdict.

An episode played in a world simulated from traces ends with a verdict: the end state the
agent reached against the task's reference (``world/verify.py``). The episode path stores it
in the sample's ``metadata["world_verdict"]``, and ``POST /v1/rewards`` refuses a sample that
carries one, so only the world sets it. This judge turns it into the score: 1.0 when the end
state was reached, 0.0 when not, the differing fields in the rationale. No model is called.

A verdict the world could not decide (``reward`` None: a write answered by no rule, which only
a model could have answered) or a sample without one is not scorable: it is masked as
``bad_sample``, never scored 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from judge_service.contracts import JudgeContext
from judge_service.domain import WORLD_VERDICT, JudgeScore, Sample, SampleNotScorable

#: How many differing fields the rationale lists.
SHOWN = 5


def verdict_of(sample: Sample) -> Mapping[str, Any]:
    """The sample's world verdict; raises when it has none."""
    verdict = sample.metadata.get(WORLD_VERDICT)
    if not isinstance(verdict, Mapping):
        raise SampleNotScorable(
            f"sample has no `metadata.{WORLD_VERDICT}`: only an episode of a world has one"
        )
    return verdict


def _reward(verdict: Mapping[str, Any]) -> float:
    reward = verdict.get("reward")
    if reward is None and not verdict.get("undetermined"):
        raise SampleNotScorable(
            "the episode was played without a reference end state (`reference: none`): "
            "it has no reward"
        )
    if reward is None:
        tools = ", ".join(str(t) for t in verdict.get("undetermined") or [])
        raise SampleNotScorable(
            "the world could not decide the end state: write calls it had no rule for "
            f"(tools: {tools}) would need a model to answer"
        )
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        raise SampleNotScorable(f"`{WORLD_VERDICT}.reward` is not a number: {reward!r}")
    if not 0.0 <= reward <= 1.0:
        raise SampleNotScorable(f"`{WORLD_VERDICT}.reward` {reward} is outside [0, 1]")
    return float(reward)


def _difference(entry: Any) -> str:
    """One differing field, as ``entity.field: why (want X, got Y)``."""
    if not isinstance(entry, Mapping):
        return str(entry)[:120]
    where = ".".join(str(p) for p in (entry.get("entity"), entry.get("field")) if p)
    want = json.dumps(entry.get("want"), ensure_ascii=False, default=str)[:60]
    got = json.dumps(entry.get("got"), ensure_ascii=False, default=str)[:60]
    return f"{where}: {entry.get('why', 'differs')} (want {want}, got {got})"


def rationale(verdict: Mapping[str, Any], reward: float) -> str:
    """Why: reached, the agent's malformed actions, or the first differing fields."""
    malformed = [str(m)[:200] for m in verdict.get("malformed") or []]
    if malformed:
        return f"the agent's action is not a chat message: {'; '.join(malformed[:SHOWN])}"
    if reward >= 1.0:
        return "the end state matches the task's reference"
    diff = list(verdict.get("diff") or [])
    if not diff:
        return "the end state does not match the task's reference"
    shown = "; ".join(_difference(entry) for entry in diff[:SHOWN])
    more = f"; and {len(diff) - SHOWN} more" if len(diff) > SHOWN else ""
    return f"the end state differs from the task's reference in {len(diff)} field(s): {shown}{more}"


class WorldEndStateJudge:
    """1.0 when the episode reached the task's reference end state, 0.0 when it did not."""

    name = "world_end_state"

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        verdict = verdict_of(sample)
        reward = _reward(verdict)
        return JudgeScore(score=reward, rationale=rationale(verdict, reward))
