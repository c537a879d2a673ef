"""Fitting the learned detector with scikit-learn: grouped cross-validation, then calibration.

Rows that share a ``group_id`` (answers to one prompt) never straddle folds. The
out-of-fold scores give the reported AUROC and the Platt calibration; the final
linear model is fitted on all rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge_service_plugins.detectors.learned import LearnedModel


def grouped_scores(
    features: list[list[float]],
    labels: list[int],
    groups: list[str],
    *,
    folds: int = 5,
    c: float = 0.5,
) -> list[float]:
    """Out-of-fold decision values, each row scored by a model that never saw its group."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = np.asarray(features, dtype=float), np.asarray(labels)
    out = np.zeros(len(y))
    splits = min(folds, len(set(groups)))
    for train, test in GroupKFold(n_splits=splits).split(x, y, groups):
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
        model.fit(x[train], y[train])
        out[test] = model.decision_function(x[test])
    return out.tolist()


def fit(
    features: list[list[float]],
    labels: list[int],
    groups: list[str],
    *,
    folds: int = 5,
    c: float = 0.5,
) -> LearnedModel:
    import numpy as np
    from judge_service_plugins.detectors.features import NAMES
    from judge_service_plugins.detectors.learned import LearnedModel
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, roc_auc_score

    if len(set(labels)) < 2:
        raise ValueError("training needs both hacks (label 1) and honest rows (label 0)")
    x, y = np.asarray(features, dtype=float), np.asarray(labels)
    oof = np.asarray(grouped_scores(features, labels, groups, folds=folds, c=c))
    platt = LogisticRegression(C=1e6, max_iter=1000).fit(oof.reshape(-1, 1), y)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    calibrated = 1 / (1 + np.exp(-(a * oof + b)))
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    final = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    metrics = {
        "rows": len(y),
        "groups": len(set(groups)),
        "hacks": int(y.sum()),
        "folds": min(folds, len(set(groups))),
        "cv_auroc": round(float(roc_auc_score(y, oof)), 4),
        "cv_brier": round(float(brier_score_loss(y, calibrated)), 4),
        "c": c,
    }
    return LearnedModel(
        names=list(NAMES),
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        coef=[round(float(v), 6) for v in final.coef_[0]],
        intercept=round(float(final.intercept_[0]), 6),
        platt_a=round(a, 6),
        platt_b=round(b, 6),
        metrics=metrics,
    )
