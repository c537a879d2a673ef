"""Fitting the learned detector with scikit-learn: grouped cross-validation, then calibration.

Rows that share a ``group_id`` (answers to one prompt) never straddle folds. The
out-of-fold scores give the reported AUROC and the Platt calibration; the final
linear model is fitted on all rows. With ``monotone`` (the agent head), the weights of the
named features are held >= 0. scikit-learn's ``LogisticRegression`` takes no bounds, so that
fit minimises the same L2-penalised logistic loss with scipy's L-BFGS-B, bounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge_service_plugins.detectors.learned import LearnedModel


def grouped_scores(
    features: list[list[float]],
    labels: list[int],
    groups: list[str],
    *,
    folds: int = 5,
    c: float = 0.5,
    nonneg: list[bool] | None = None,
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
        if nonneg is not None:
            mean, scale = standardise(x[train])
            coef, intercept = fit_signed((x[train] - mean) / scale, y[train], nonneg, c=c)
            out[test] = ((x[test] - mean) / scale) @ coef + intercept
            continue
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
        model.fit(x[train], y[train])
        out[test] = model.decision_function(x[test])
    return out.tolist()


def standardise(x: Any) -> tuple[Any, Any]:
    """Column means and standard deviations (1 where a column is constant)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def fit_signed(z: Any, y: Any, nonneg: list[bool], *, c: float) -> tuple[Any, float]:
    """Logistic regression on standardised ``z`` whose weights flagged in ``nonneg`` stay >= 0.

    The loss is scikit-learn's own: ``sum(log(1 + e^m) - y m) + |w|^2 / (2c)``.
    """
    import numpy as np
    from scipy.optimize import minimize

    width = z.shape[1]

    def loss(params: Any) -> tuple[float, Any]:
        w, b = params[:width], params[width]
        margin = z @ w + b
        p = 1.0 / (1.0 + np.exp(-margin))
        value = np.logaddexp(0.0, margin).sum() - y @ margin + (w @ w) / (2 * c)
        grad = np.append(z.T @ (p - y) + w / c, (p - y).sum())
        return float(value), grad

    bounds = [(0.0, None) if keep else (None, None) for keep in nonneg] + [(None, None)]
    found = minimize(loss, np.zeros(width + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return found.x[:width], float(found.x[width])


def fit(
    features: list[list[float]],
    labels: list[int],
    groups: list[str],
    *,
    folds: int = 5,
    c: float = 0.5,
    names: list[str] | None = None,
    model: type[LearnedModel] | None = None,
    monotone: frozenset[str] = frozenset(),
) -> LearnedModel:
    """The text head by default; ``names`` and ``model`` fit another dense head (the agent's);
    ``monotone`` names the features whose weights may not go below 0."""
    import numpy as np
    from judge_service_plugins.detectors.calibration import platt_and_metrics
    from judge_service_plugins.detectors.features import NAMES
    from judge_service_plugins.detectors.learned import LearnedModel
    from sklearn.linear_model import LogisticRegression

    if len(set(labels)) < 2:
        raise ValueError("training needs both hacks (label 1) and honest rows (label 0)")
    x, y = np.asarray(features, dtype=float), np.asarray(labels)
    names = list(names or NAMES)
    nonneg = [name in monotone for name in names] if monotone else None
    oof = np.asarray(grouped_scores(features, labels, groups, folds=folds, c=c, nonneg=nonneg))
    a, b, metrics = platt_and_metrics(oof, y, groups, folds=folds, c=c)
    mean, scale = standardise(x)
    if nonneg is not None:
        coef, intercept = fit_signed((x - mean) / scale, y, nonneg, c=c)
        pairs = zip(coef, nonneg, strict=True)
        coef = [max(0.0, float(v)) if keep else float(v) for v, keep in pairs]
    else:
        final = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
        coef, intercept = list(final.coef_[0]), float(final.intercept_[0])
    return (model or LearnedModel)(
        names=names,
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        coef=[round(float(v), 6) for v in coef],
        intercept=round(float(intercept), 6),
        platt_a=round(a, 6),
        platt_b=round(b, 6),
        metrics=metrics,
    )
