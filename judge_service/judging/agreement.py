"""How well each judge agrees with human labels, and an isotonic map from its score to P(good).

Cohen's kappa compares the judge's verdict (score at or above a threshold = good) with the
label, corrected for chance; Spearman's rho compares the ranking its scores imply. The map
(sklearn's IsotonicRegression, increasing) turns a score into the share of rollouts humans
called good at that score; a judge that does not track the labels gets a flat map, which is
what lets a calibrated consensus discount it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

THRESHOLD = 0.5
MIN_LABELS_FOR_CALIBRATION = 10


@dataclass(frozen=True)
class JudgeFigures:
    judge: str
    labels: int
    good: int
    bad: int
    cohen_kappa: float | None
    spearman_rho: float | None
    spearman_p: float | None
    calibration: tuple[list[float], list[float]] | None


def _finite(value: float) -> float | None:
    value = float(value)
    return round(value, 6) if math.isfinite(value) else None


def calibration_map(
    scores: Sequence[float], good: Sequence[bool], *, min_labels: int = MIN_LABELS_FOR_CALIBRATION
) -> tuple[list[float], list[float]] | None:
    """The isotonic map's knots ``(x, y)``; None with too few labels or only one class."""
    if len(scores) < min_labels or len(set(good)) < 2:
        return None
    from sklearn.isotonic import IsotonicRegression  # ~1.5 s to import: not at the app's start

    model = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    model.fit(list(scores), [1.0 if g else 0.0 for g in good])
    xs = [round(float(x), 6) for x in model.X_thresholds_]
    ys = [round(float(y), 6) for y in model.y_thresholds_]
    return xs, ys


def figures(
    judge: str, pairs: Sequence[tuple[float, bool]], *, threshold: float = THRESHOLD
) -> JudgeFigures:
    """Agreement of one judge's ``(score, human says good)`` pairs."""
    scores = [s for s, _ in pairs]
    good = [g for _, g in pairs]
    kappa = rho = p = None
    if len(pairs) >= 2:
        # scipy and sklearn take ~1.5 s to import: here, not when the app starts
        from scipy.stats import spearmanr
        from sklearn.metrics import cohen_kappa_score

        with warnings.catch_warnings():  # constant inputs: undefined, reported as None
            warnings.simplefilter("ignore")
            verdicts = [s >= threshold for s in scores]
            if len(set(verdicts) | set(good)) > 1:
                kappa = _finite(cohen_kappa_score(good, verdicts))
            if len(set(scores)) > 1 and len(set(good)) > 1:
                result = spearmanr(scores, [1.0 if g else 0.0 for g in good])
                rho, p = _finite(result.statistic), _finite(result.pvalue)
    return JudgeFigures(
        judge=judge,
        labels=len(pairs),
        good=sum(good),
        bad=len(good) - sum(good),
        cohen_kappa=kappa,
        spearman_rho=rho,
        spearman_p=p,
        calibration=calibration_map(scores, good),
    )


def by_judge(
    pairs: Iterable[tuple[str, float, bool]], *, threshold: float = THRESHOLD
) -> list[JudgeFigures]:
    """Figures per judge, in judge name order, from ``(judge, score, good)`` triples."""
    grouped: dict[str, list[tuple[float, bool]]] = {}
    for judge, score, good in pairs:
        grouped.setdefault(judge, []).append((score, good))
    return [figures(j, grouped[j], threshold=threshold) for j in sorted(grouped)]
