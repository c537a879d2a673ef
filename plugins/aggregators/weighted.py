"""The built-in aggregators. Each honours judge weights; zero-weight judges are ignored."""

from __future__ import annotations

from collections.abc import Sequence


def _pairs(scores: Sequence[float], weights: Sequence[float]) -> list[tuple[float, float]]:
    if len(scores) == 1 == len(weights) and weights[0] > 0:  # one judge: nothing to sort
        return [(scores[0], weights[0])]
    pairs = sorted((s, w) for s, w in zip(scores, weights, strict=True) if w > 0)
    if not pairs:
        raise ValueError("no judge with positive weight")
    return pairs


class WeightedMean:
    name = "mean"

    def aggregate(self, scores: Sequence[float], weights: Sequence[float]) -> float:
        pairs = _pairs(scores, weights)
        if len(pairs) == 1:  # the usual one-judge panel, once per sample: skip the generators
            score, weight = pairs[0]
            return score * weight / weight  # the same float as the general formula
        return sum(s * w for s, w in pairs) / sum(w for _, w in pairs)


class WeightedMedian:
    """The score at half the total weight; the mean of the two middles on an exact tie."""

    name = "median"

    def aggregate(self, scores: Sequence[float], weights: Sequence[float]) -> float:
        pairs = _pairs(scores, weights)
        half = sum(w for _, w in pairs) / 2
        cumulative = 0.0
        for index, (score, weight) in enumerate(pairs):
            cumulative += weight
            if abs(cumulative - half) < 1e-12 and index + 1 < len(pairs):
                return (score + pairs[index + 1][0]) / 2
            if cumulative > half:
                return score
        return pairs[-1][0]


class Minimum:
    """The harshest judge with positive weight: a conservative reward."""

    name = "min"

    def aggregate(self, scores: Sequence[float], weights: Sequence[float]) -> float:
        return _pairs(scores, weights)[0][0]


class WeightedMajority:
    """1 when judges holding over half the weight pass the sample, 0 when fewer, 0.5 on a tie."""

    name = "majority"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def aggregate(self, scores: Sequence[float], weights: Sequence[float]) -> float:
        pairs = _pairs(scores, weights)
        total = sum(w for _, w in pairs)
        passing = sum(w for s, w in pairs if s >= self.threshold)
        if abs(passing - total / 2) < 1e-12:
            return 0.5
        return 1.0 if passing > total / 2 else 0.0


class TrimmedMean:
    """Weighted mean after cutting ``trim`` of the total weight from each end."""

    name = "trimmed_mean"

    def __init__(self, *, trim: float = 0.2) -> None:
        if not 0 <= trim < 0.5:
            raise ValueError("trim must be in [0, 0.5)")
        self.trim = trim

    def aggregate(self, scores: Sequence[float], weights: Sequence[float]) -> float:
        pairs = _pairs(scores, weights)
        total = sum(w for _, w in pairs)
        low, high = self.trim * total, (1 - self.trim) * total
        kept_sum = kept_weight = cumulative = 0.0
        for score, weight in pairs:
            start, end = cumulative, cumulative + weight
            cumulative = end
            overlap = max(0.0, min(end, high) - max(start, low))
            kept_sum += score * overlap
            kept_weight += overlap
        return kept_sum / kept_weight
