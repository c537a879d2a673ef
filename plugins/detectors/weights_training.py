"""Fitting the rules' finding weights (``finding_weights``) on labelled rollouts.

Every rule detector that reads a sample alone (the agent head's rules, the text rules) runs on
each labelled row, text answers and trajectories alike; which ``detector/kind`` fired on
which row, against the row's label, gives the table. The rules' own output is all it reads,
so no weight feeds its own fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from judge_service_plugins.detectors.agent_features import AGENT_RULES
from judge_service_plugins.detectors.finding_weights import FindingWeights, fit_weights
from judge_service_plugins.detectors.learned import RULES, sample_of

from judge_service.contracts import Evidence

_PLAIN = Evidence()
_LABELS = {"1": 1, "0": 0, "true": 1, "false": 0, "1.0": 1, "0.0": 0}


def train_weights(rows: Iterable[Mapping[str, Any]]) -> FindingWeights:
    """The weights table from labelled rows (``label`` 1 = hack), text and trajectories."""
    rules = {rule.name: rule for rule in (*AGENT_RULES, *RULES)}.values()
    pairs = []
    for index, row in enumerate(rows):
        label = str(row.get("label")).strip().lower()
        if label not in _LABELS:
            continue
        sample = sample_of(row, index)
        findings = [f for rule in rules for f in rule.detect(sample, _PLAIN)]
        pairs.append((findings, _LABELS[label]))
    if not pairs:
        raise ValueError("fitting the finding weights needs labelled rows")
    return fit_weights(pairs)
