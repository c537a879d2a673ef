"""What the learned detector's two heads share: calibration, loading, fitting the calibration.

Each head is a logistic score ``z`` calibrated by Platt scaling on out-of-fold scores,
``p = sigmoid(a * z + b)``, then moved from the training rows' base rate to the deployment
one (``prior``: the training sets are about half hacks, a training run is not). Both are
stored as plain JSON and refuse a file whose features differ from this version's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypeVar

Model = TypeVar("Model")


def calibrate(
    z: float, platt_a: float, platt_b: float, metrics: dict[str, Any], prior: float | None
) -> float:
    """Calibrated P(hack) of the score ``z``; with ``prior``, at that base rate."""
    logit = platt_a * z + platt_b
    rate = float(metrics.get("hacks", 1)) / max(1.0, float(metrics.get("rows", 2)))
    if prior is not None and 0.0 < rate < 1.0:
        logit += math.log(prior / (1 - prior)) - math.log(rate / (1 - rate))
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, logit))))


def load_checked(cls: type[Model], path: str | Path, names: list[str], what: str) -> Model:
    """The model stored at ``path``, refused when its feature names are not ``names``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    model = cls(**data)
    if model.names != names:  # type: ignore[attr-defined]
        raise ValueError(f"{path}: {what} features differ from this version's; retrain it")
    return model


def platt_and_metrics(
    oof: Any, y: Any, groups: list[str], *, folds: int, c: float
) -> tuple[float, float, dict[str, Any]]:
    """Platt scaling fitted on the out-of-fold scores, and the figures every head reports."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, roc_auc_score

    platt = LogisticRegression(C=1e6, max_iter=1000).fit(oof.reshape(-1, 1), y)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    calibrated = 1 / (1 + np.exp(-(a * oof + b)))
    metrics = {
        "rows": len(y),
        "groups": len(set(groups)),
        "hacks": int(y.sum()),
        "folds": min(folds, len(set(groups))),
        "cv_auroc": round(float(roc_auc_score(y, oof)), 4),
        "cv_brier": round(float(brier_score_loss(y, calibrated)), 4),
        "c": c,
    }
    return a, b, metrics
