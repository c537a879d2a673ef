"""The built-in aggregators, loaded through the registry, each honouring judge weights."""

from __future__ import annotations

from typing import Any

import pytest

from judge_service.contracts import Aggregator
from judge_service.core.registry import PluginError, Registry

BUILTIN = ["mean", "median", "min", "majority", "trimmed_mean"]


def agg(name: str, **options: Any) -> Any:
    aggregator = Registry().create("aggregators", name, **options)
    assert isinstance(aggregator, Aggregator)
    return aggregator


def combine(name: str, scores: list[float], weights: list[float] | None = None, **opts: Any):
    return agg(name, **opts).aggregate(scores, weights or [1.0] * len(scores))


@pytest.mark.parametrize("name", BUILTIN)
def test_unanimous_panel_gives_its_score(name: str) -> None:
    expected = 1.0 if name == "majority" else 0.8  # majority votes pass/fail
    assert combine(name, [0.8, 0.8, 0.8]) == pytest.approx(expected)


@pytest.mark.parametrize("name", BUILTIN)
def test_zero_weight_judges_are_ignored(name: str) -> None:
    scores = [0.9, 0.8, 0.0, 0.0]
    with_zero = combine(name, scores, [1.0, 1.0, 0.0, 0.0])
    without = combine(name, [0.9, 0.8], [1.0, 1.0])
    assert with_zero == pytest.approx(without)


@pytest.mark.parametrize("name", BUILTIN)
def test_all_zero_weights_is_an_error(name: str) -> None:
    with pytest.raises(ValueError):
        combine(name, [0.5, 0.7], [0.0, 0.0])


@pytest.mark.parametrize("name", BUILTIN)
def test_scaling_all_weights_changes_nothing(name: str) -> None:
    scores = [0.1, 0.4, 0.45, 0.9, 1.0]
    weights = [1.0, 2.0, 0.5, 3.0, 1.5]
    assert combine(name, scores, weights) == pytest.approx(
        combine(name, scores, [w * 7.5 for w in weights])
    )


@pytest.mark.parametrize("name", BUILTIN)
@pytest.mark.parametrize(
    ("scores", "weights"),
    [
        ([0.2, 0.9], [3, 1]),
        ([0.0, 0.3, 1.0], [1, 2, 1]),
        ([0.1, 0.6, 0.7, 1.0], [2, 1, 3, 1]),
        ([1.0, 0.0, 0.4], [1, 1, 5]),
    ],
)
def test_integer_weight_counts_like_repeated_judges(
    name: str, scores: list[float], weights: list[int]
) -> None:
    """A judge of weight k weighs as much as k copies of it with weight 1."""
    repeated = [s for s, w in zip(scores, weights, strict=True) for _ in range(w)]
    assert combine(name, scores, [float(w) for w in weights]) == pytest.approx(
        combine(name, repeated)
    )


@pytest.mark.parametrize("name", BUILTIN)
def test_order_of_judges_does_not_matter(name: str) -> None:
    scores, weights = [0.3, 0.9, 0.6, 0.1], [1.0, 2.0, 0.5, 1.0]
    forward = combine(name, scores, weights)
    backward = combine(name, scores[::-1], weights[::-1])
    assert forward == pytest.approx(backward)


@pytest.mark.parametrize("name", BUILTIN)
def test_result_is_within_score_range(name: str) -> None:
    value = combine(name, [0.2, 0.5, 0.7], [1.0, 2.0, 1.0])
    assert 0.0 <= value <= 1.0


# --- mean --------------------------------------------------------------------------------


def test_mean_weighted() -> None:
    assert combine("mean", [0.0, 1.0]) == pytest.approx(0.5)
    assert combine("mean", [0.0, 1.0], [1.0, 3.0]) == pytest.approx(0.75)
    assert combine("mean", [0.2, 0.6, 1.0], [2.0, 1.0, 1.0]) == pytest.approx(0.5)


# --- median ------------------------------------------------------------------------------


def test_median_unweighted_odd_and_even() -> None:
    assert combine("median", [0.9, 0.1, 0.5]) == pytest.approx(0.5)
    assert combine("median", [0.2, 0.8, 0.4, 0.6]) == pytest.approx(0.5)


def test_median_weighted_moves_to_the_heavy_judge() -> None:
    assert combine("median", [0.1, 0.5, 0.9], [1.0, 1.0, 3.0]) == pytest.approx(0.9)
    assert combine("median", [0.1, 0.5, 0.9], [3.0, 1.0, 1.0]) == pytest.approx(0.1)
    assert combine("median", [0.1, 0.5, 0.9], [1.0, 3.0, 1.0]) == pytest.approx(0.5)


def test_median_ignores_an_outlier_the_mean_does_not() -> None:
    scores = [0.8, 0.8, 0.0]
    assert combine("median", scores) == pytest.approx(0.8)
    assert combine("mean", scores) < 0.6


# --- min ---------------------------------------------------------------------------------


def test_min_is_the_harshest_weighted_judge() -> None:
    assert combine("min", [0.7, 0.3, 0.9]) == pytest.approx(0.3)
    assert combine("min", [0.7, 0.3, 0.9], [1.0, 0.0, 1.0]) == pytest.approx(0.7)
    assert combine("min", [0.7, 0.3, 0.9], [1.0, 0.01, 1.0]) == pytest.approx(0.3)


# --- majority ----------------------------------------------------------------------------


def test_majority_votes_pass_or_fail() -> None:
    assert combine("majority", [0.9, 0.8, 0.1]) == 1.0
    assert combine("majority", [0.9, 0.2, 0.1]) == 0.0


def test_majority_tie_is_one_half() -> None:
    assert combine("majority", [1.0, 0.0]) == 0.5
    assert combine("majority", [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]) == 0.5


def test_majority_weights_decide() -> None:
    assert combine("majority", [1.0, 0.0, 0.0], [3.0, 1.0, 1.0]) == 1.0
    assert combine("majority", [1.0, 1.0, 0.0], [1.0, 1.0, 3.0]) == 0.0


def test_majority_threshold_option() -> None:
    assert combine("majority", [0.6, 0.6, 0.1]) == 1.0
    assert combine("majority", [0.6, 0.6, 0.1], threshold=0.7) == 0.0


# --- trimmed_mean ------------------------------------------------------------------------


def test_trimmed_mean_cuts_outliers() -> None:
    scores = [0.0, 0.5, 0.5, 0.5, 1.0]
    assert combine("trimmed_mean", scores) == pytest.approx(0.5)  # default trim 0.2
    assert combine("trimmed_mean", [0.0, 0.6, 0.6, 0.6, 0.6]) == pytest.approx(0.6)


def test_trimmed_mean_trims_weight_mass_not_judges() -> None:
    # Total weight 5, trim 0.2 cuts 1 unit from each end: the heavy judge keeps 3 units.
    assert combine("trimmed_mean", [0.0, 1.0], [1.0, 4.0]) == pytest.approx(1.0)
    assert combine("trimmed_mean", [0.0, 1.0], [4.0, 1.0]) == pytest.approx(0.0)
    # Partial cuts: weight 3, cut 0.6 from each end -> 0.4*0 + 1*0.3 + 0.4*1 over 1.8.
    assert combine("trimmed_mean", [0.0, 0.3, 1.0]) == pytest.approx(0.7 / 1.8)


def test_trimmed_mean_with_no_trim_is_the_weighted_mean() -> None:
    scores, weights = [0.1, 0.4, 0.95], [2.0, 1.0, 1.0]
    assert combine("trimmed_mean", scores, weights, trim=0.0) == pytest.approx(
        combine("mean", scores, weights)
    )


@pytest.mark.parametrize("trim", [-0.1, 0.5, 0.9])
def test_trimmed_mean_bad_trim_is_refused(trim: float) -> None:
    with pytest.raises(PluginError):
        Registry().create("aggregators", "trimmed_mean", trim=trim)


def test_unknown_aggregator_option_is_refused() -> None:
    with pytest.raises(PluginError):
        Registry().create("aggregators", "mean", bogus=1)
