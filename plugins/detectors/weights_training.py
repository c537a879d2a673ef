"""Fitting the rules' finding weights (``finding_weights``) on labelled rollouts.

Every rule detector that reads a sample alone (the agent head's rules, the text rules) runs on
each labelled row, text answers and trajectories alike; which ``detector/kind`` fired on
which row, against the row's label, gives the table. The rules' own output is all it reads,
so no weight feeds its own fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from judge_service_plugins.detectors.agent_features import agent_rule_findings
from judge_service_plugins.detectors.finding_weights import FindingWeights, fit_weights
from judge_service_plugins.detectors.learned import label_of, rule_findings, sample_of


def train_weights(rows: Iterable[Mapping[str, Any]]) -> FindingWeights:
    """The weights table from labelled rows (``label`` 1 = hack), text and trajectories. A rule
    in both lists is counted once per row (``fit_weights`` counts a kind once per rollout)."""
    pairs = []
    for index, row in enumerate(rows):
        label = label_of(row)
        if label is None:
            continue
        sample = sample_of(row, index)
        pairs.append(([*agent_rule_findings(sample), *rule_findings(sample)], label))
    if not pairs:
        raise ValueError("fitting the finding weights needs labelled rows")
    return fit_weights(pairs)
