"""The learned detector's two heads as plain JSON: standardise, score linearly, calibrate.

``p = sigmoid(a * (w . z + b) + c)``, with a Platt calibration fitted on out-of-fold scores.
Loading runs no pickled code, and a file whose features differ from this version's is
refused. ``LearnedModel`` is the text head (``features.NAMES``), ``AuditModel`` the agent
head (``agent_features.AGENT_NAMES``, the audit model over facts).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judge_service_plugins.detectors.calibration import calibrate, load_checked


@dataclass
class LearnedModel:
    names: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    platt_a: float = 1.0
    platt_b: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)

    def logit(self, features: list[float]) -> float:
        z = self.intercept
        for x, m, s, w in zip(features, self.mean, self.scale, self.coef, strict=True):
            z += w * (x - m) / s
        return z

    def probability(self, features: list[float], prior: float | None = None) -> float:
        """Calibrated P(hack); with ``prior``, moved from the training base rate to that one."""
        return calibrate(self.logit(features), self.platt_a, self.platt_b, self.metrics, prior)

    def contributions(self, features: list[float]) -> list[tuple[float, str]]:
        """Each feature's push on the score against an average row, largest first."""
        parts = [
            (w * (x - m) / s, name)
            for x, m, s, w, name in zip(
                features, self.mean, self.scale, self.coef, self.names, strict=True
            )
        ]
        return sorted(parts, reverse=True)

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> LearnedModel:
        from judge_service_plugins.detectors.features import NAMES

        return load_checked(cls, path, NAMES, "the model's")


@dataclass
class AuditModel(LearnedModel):
    """The agent head: one calibrated logistic model over the facts of a trajectory."""

    @classmethod
    def load(cls, path: str | Path) -> AuditModel:
        from judge_service_plugins.detectors.agent_features import AGENT_NAMES

        return load_checked(cls, path, AGENT_NAMES, "the audit model's")
