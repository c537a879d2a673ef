"""Calibrated consensus: each judge's score passes through its isotonic map before consensus.

The maps (score -> P(a human labels the rollout good), fitted from human labels) are frozen
into the batch's plan when it is accepted, so a re-run scores the same way. A judge without a
map keeps its raw score. Opt-in per request (``calibrate: true``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from typing import Any

from judge_service.contracts import Judge, JudgeContext
from judge_service.domain import JudgeScore, Sample
from judge_service.judging.consensus import Panel


def interpolate(x: float, xs: list[float], ys: list[float]) -> float:
    """Piecewise-linear through the knots, flat beyond them (as isotonic ``clip`` does)."""
    if not xs:
        return x
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@dataclass(frozen=True)
class CalibratedJudge:
    """Wraps a judge; its score becomes the calibrated probability, the raw one is kept in
    the rationale."""

    inner: Judge
    xs: list[float]
    ys: list[float]

    @property
    def name(self) -> str:
        return self.inner.name

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        raw = await self.inner.score(sample, context)
        value = max(0.0, min(1.0, interpolate(raw.score, self.xs, self.ys)))
        rationale = f"{raw.rationale} [calibrated from {raw.score:.3f}]".strip()
        return raw.model_copy(update={"score": value, "rationale": rationale})


def calibrate_panel(panel: Panel, maps: dict[str, Any]) -> Panel:
    """The panel with every judge that has a map (by panel member name) wrapped."""
    members = [
        replace(m, judge=CalibratedJudge(m.judge, list(maps[m.name]["x"]), list(maps[m.name]["y"])))
        if m.name in maps
        else m
        for m in panel.members
    ]
    return replace(panel, members=members)
