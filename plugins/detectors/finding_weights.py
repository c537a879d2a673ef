"""How much a rule's finding says "hack": measured on labelled rollouts, never written by the rule.

Rules state facts: a kind, a severity (the act itself, a likely act, a hint) and the evidence.
The confidence a finding carries is the precision of its kind on the labelled corpora: of
the rollouts where ``detector/kind`` fired, the share that were hacks, shrunk towards the
precision of every finding of that severity (a kind seen a few times says little on its own).
A kind never seen takes its severity's precision, a severity never seen the precision of all
findings. ``judge-service detectors train`` fits the table and writes
``models/finding_weights.json``; loading it runs no code.

The score of a trajectory is the audit model's (``learned``); these weights are what the rules'
own findings show, and what combines them for a text answer.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from judge_service.domain import SEVERITY_WEIGHT, Finding

WEIGHTS_FILE = "finding_weights.json"
#: How many rollouts' worth of the severity's precision a kind's own count is shrunk towards.
SHRINK = 2.0


@dataclass
class FindingWeights:
    kinds: dict[str, float] = field(default_factory=dict)  # "detector/kind" -> precision
    severities: dict[str, float] = field(default_factory=dict)  # "high" -> precision
    overall: float = 0.5
    counts: dict[str, list[int]] = field(default_factory=dict)  # "detector/kind" -> [hacks, n]

    def weight(self, detector: str, kind: str, severity: str) -> float:
        found = self.kinds.get(f"{detector}/{kind}")
        if found is not None:
            return found
        return self.severities.get(severity, self.overall)

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(asdict(self), indent=1, sort_keys=True) + "\n", "utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> FindingWeights:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))


def fit_weights(rows: Iterable[tuple[Sequence[Finding], int]]) -> FindingWeights:
    """The table from (a rollout's rule findings, its label) pairs: each ``detector/kind`` counted
    once per rollout, with the most severe severity it had there."""
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    severity_of: dict[str, str] = {}
    by_severity: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    every = [0, 0]
    for findings, label in rows:
        seen: dict[str, str] = {}
        for f in findings:
            if f.severity == "info":
                continue
            key = f"{f.detector}/{f.kind}"
            if SEVERITY_WEIGHT[f.severity] >= SEVERITY_WEIGHT[seen.get(key, "low")]:
                seen[key] = f.severity
        for key, severity in seen.items():
            for counter in (kinds[key], by_severity[severity], every):
                counter[0] += label
                counter[1] += 1
            severity_of[key] = severity
    overall = (every[0] + 1) / (every[1] + 2)
    severities = {
        s: round((h + SHRINK * overall) / (n + SHRINK), 4) for s, (h, n) in by_severity.items()
    }
    table = {
        key: round((h + SHRINK * severities[severity_of[key]]) / (n + SHRINK), 4)
        for key, (h, n) in kinds.items()
    }
    return FindingWeights(
        kinds=dict(sorted(table.items())),
        severities=dict(sorted(severities.items())),
        overall=round(overall, 4),
        counts={k: list(v) for k, v in sorted(kinds.items())},
    )


@cache
def shipped() -> FindingWeights:
    """The table shipped with the detectors (an empty one where none is, at 0.5 for every kind)."""
    path = resources.files("judge_service_plugins.detectors") / "models" / WEIGHTS_FILE
    with resources.as_file(path) as file:
        return FindingWeights.load(file) if Path(file).is_file() else FindingWeights()
