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
    names: list[str] | None = None,
    model: type[LearnedModel] | None = None,
) -> LearnedModel:
    """The text head by default; ``names`` and ``model`` fit another dense head (the agent's)."""
    import numpy as np
    from judge_service_plugins.detectors.calibration import platt_and_metrics
    from judge_service_plugins.detectors.features import NAMES
    from judge_service_plugins.detectors.learned import LearnedModel
    from sklearn.linear_model import LogisticRegression

    if len(set(labels)) < 2:
        raise ValueError("training needs both hacks (label 1) and honest rows (label 0)")
    x, y = np.asarray(features, dtype=float), np.asarray(labels)
    oof = np.asarray(grouped_scores(features, labels, groups, folds=folds, c=c))
    a, b, metrics = platt_and_metrics(oof, y, groups, folds=folds, c=c)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    final = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return (model or LearnedModel)(
        names=list(names or NAMES),
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        coef=[round(float(v), 6) for v in final.coef_[0]],
        intercept=round(float(final.intercept_[0]), 6),
        platt_a=round(a, 6),
        platt_b=round(b, 6),
        metrics=metrics,
    )
