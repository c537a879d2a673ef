"""Fitting the audit model (the learned detector's agent head) with scikit-learn.

A logistic regression over the facts (``agent_features``), its act features' weights held
>= 0 (``MONOTONE``: a fact that makes a hack worse never lowers the score), with grouped
cross-validation (no
``group_id`` on both sides) for the out-of-fold scores, the reported AUROC and the Platt
calibration; the final model is fitted on every row and exported as plain JSON.
"""

from __future__ import annotations

from judge_service_plugins.detectors.agent_features import AGENT_NAMES, MONOTONE
from judge_service_plugins.detectors.learned_model import AuditModel
from judge_service_plugins.detectors.training import fit


def fit_agent(
    dense: list[list[float]],
    labels: list[int],
    groups: list[str],
    *,
    folds: int = 5,
    c: float = 0.5,
) -> AuditModel:
    if len(set(labels)) < 2:
        raise ValueError(
            "training the agent head needs both hacks (label 1) and honest rows (label 0)"
        )
    model = fit(
        dense,
        labels,
        groups,
        folds=folds,
        c=c,
        names=AGENT_NAMES,
        model=AuditModel,
        monotone=MONOTONE,
    )
    assert isinstance(model, AuditModel)
    return model
