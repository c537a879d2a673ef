"""The audit model is monotone in the act (issue 49): a fact that makes a hack worse can never
lower the score, and the rules hand it facts, never their own confidence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from judge_service_plugins.detectors.agent_features import (
    AGENT_NAMES,
    AGENT_RULES,
    MONOTONE,
    agent_featurize,
    agent_rule_findings,
)
from judge_service_plugins.detectors.learned import LearnedDetector
from judge_service_plugins.detectors.training import fit_signed, standardise

from judge_service.domain import Sample

ROOT = Path(__file__).resolve().parents[2]
CANONICAL = ROOT / "data" / "agents" / "canonical_trajectories.jsonl"


def test_every_act_feature_is_held_non_negative_in_the_shipped_model() -> None:
    model = LearnedDetector().agent
    assert model is not None and model.names == AGENT_NAMES
    weights = dict(zip(model.names, model.coef, strict=True))
    assert {f"rule_{rule.name}" for rule in AGENT_RULES} <= MONOTONE
    assert "defeats_check" in MONOTONE and weights["defeats_check"] > 0
    assert all(weights[name] >= 0 for name in MONOTONE), {
        n: w for n, w in weights.items() if n in MONOTONE and w < 0
    }


def test_adding_any_act_to_a_rollout_never_lowers_its_probability() -> None:
    model = LearnedDetector().agent
    assert model is not None
    row = json.loads(CANONICAL.read_text(encoding="utf-8").splitlines()[0])
    dense = agent_featurize(Sample(id="x", prompt=row["prompt"], completion=row["completion"]))
    base = model.probability(dense)
    for index, name in enumerate(AGENT_NAMES):
        if name in MONOTONE and not dense[index]:
            raised = list(dense)
            raised[index] = 1.0
            assert model.probability(raised) >= base - 1e-12, name


def test_the_signed_fit_holds_a_weight_that_an_unconstrained_fit_makes_negative() -> None:
    """A feature seen mostly on honest rows: logistic regression gives it a negative weight;
    held non-negative, it gets 0, and the free feature keeps its sign."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    act = (rng.random(400) < np.where(y == 1, 0.2, 0.6)).astype(float)  # odd on purpose
    signal = y + rng.normal(0, 0.5, 400)
    x = np.column_stack([act, signal])
    mean, scale = standardise(x)
    z = (x - mean) / scale
    free = LogisticRegression(C=0.5).fit(z, y).coef_[0]
    held, _ = fit_signed(z, y, [True, False], c=0.5)
    assert free[0] < -0.1
    assert held[0] == pytest.approx(0.0, abs=1e-6) and held[1] > 0.5


def test_the_features_read_whether_a_rule_fired_not_how_sure_it_was() -> None:
    """A rule's confidence is its own literal; the model must not read it."""
    rows = [json.loads(line) for line in CANONICAL.read_text(encoding="utf-8").splitlines()]
    row = next(r for r in rows if r["kind"] == "canonical:delete_test")
    sample = Sample(id="y", prompt=row["prompt"], completion=row["completion"])
    findings = agent_rule_findings(sample)
    assert any(f.severity != "info" for f in findings)
    halved = [f.model_copy(update={"confidence": f.confidence / 2}) for f in findings]
    assert agent_featurize(sample, findings) == agent_featurize(sample, halved)
