"""Rules state facts, never numbers (issue 49): no detector writes a confidence of its own.

A rule's finding says what it saw (``kind``), how direct the act is (``severity``) and where
(``evidence``); the confidence it carries is the precision of its kind on the labelled
corpora (``models/finding_weights.json``, fitted by ``judge-service detectors train``).
The model-backed detectors are the exceptions by nature: ``learned`` reports its calibrated
probability, ``llm_hindsight`` its monitor's, ``known_hack`` a measured similarity.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from judge_service_plugins.detectors.base import Found, make
from judge_service_plugins.detectors.finding_weights import FindingWeights, fit_weights, shipped

from judge_service.domain import Finding

ROOT = Path(__file__).resolve().parents[2]
DETECTORS = ROOT / "plugins" / "detectors"
#: Their numbers come from a model or a measurement, not from a rule.
MODEL_BACKED = {"learned.py", "learned_model.py", "hindsight.py", "known_hacks.py"}


def _numbers_in(node: ast.AST) -> list[float]:
    return [
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, float | int)
        if not isinstance(n.value, bool)
    ]


def literal_confidences(path: Path) -> list[str]:
    """Places in ``path`` where a number reaches a finding's confidence: a ``confidence=``
    keyword, an update of ``"confidence"``, or a numeric argument to ``make``/``Found.add``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "confidence" and _numbers_in(node.value):
            out.append(f"{path.name}:{node.value.lineno} confidence=…")
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value == "confidence":
                    out.append(f"{path.name}:{key.lineno} {{'confidence': …}}")
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            attr = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if name == "make" or (attr == "add" and len(node.args) >= 3):
                numbers = [a for a in node.args if _numbers_in(a) and not isinstance(a, ast.Call)]
                if any(isinstance(a, ast.Constant) for a in numbers):
                    out.append(f"{path.name}:{node.lineno} a number passed to {name or attr}")
    return out


def test_no_rule_detector_holds_a_literal_confidence() -> None:
    files = sorted(p for p in DETECTORS.glob("**/*.py") if p.name not in MODEL_BACKED)
    assert len(files) > 30
    found = [place for path in files for place in literal_confidences(path)]
    assert found == []


def test_the_check_itself_finds_a_literal_confidence(tmp_path: Path) -> None:
    rule = tmp_path / "rule.py"
    rule.write_text(
        "def detect(found):\n"
        "    found.add('kind', 'high', 0.9, 'evidence')\n"
        "    return Finding(detector='d', kind='k', severity='high', confidence=0.8)\n"
        "    x = f.model_copy(update={'confidence': 0.3})\n",
        encoding="utf-8",
    )
    assert len(literal_confidences(rule)) == 3


def test_a_rules_finding_carries_the_measured_precision_of_its_kind() -> None:
    weights = shipped()
    assert weights.kinds, "the detectors ship their finding weights"
    finding = make("judge_injection", "judge_injection", "high", "completion line 1: `x`")
    assert finding.confidence == weights.kinds["judge_injection/judge_injection"]
    unseen = make("judge_injection", "never_seen_kind", "medium", "completion line 1: `x`")
    assert unseen.confidence == weights.severities["medium"]


def test_found_keeps_the_most_severe_finding_of_a_kind() -> None:
    found = Found("test_tampering")
    found.add("edited_tests", "medium", "message 1: `a`")
    found.add("edited_tests", "high", "message 2: `b`")
    found.add("edited_tests", "medium", "message 3: `c`")
    [kept] = found.list()
    assert kept.severity == "high" and kept.evidence.startswith("message 2")


def _finding(detector: str, kind: str, severity: str = "high") -> Finding:
    return Finding(detector=detector, kind=kind, severity=severity, confidence=0.5, evidence="e")


def test_the_weights_are_each_kinds_precision_shrunk_towards_its_severity() -> None:
    rows = [([_finding("d", "always")], 1)] * 8 + [([_finding("d", "mixed")], y) for y in (1, 0)]
    rows += [([], 0)] * 5
    weights = fit_weights(rows)
    assert weights.counts == {"d/always": [8, 8], "d/mixed": [1, 2]}
    high = weights.severities["high"]
    assert weights.kinds["d/always"] == pytest.approx((8 + 2 * high) / 10, abs=1e-4)
    assert weights.kinds["d/mixed"] == pytest.approx((1 + 2 * high) / 4, abs=1e-4)
    assert weights.kinds["d/always"] > weights.kinds["d/mixed"]
    # counted once per rollout, at the most severe severity it had there
    twice = fit_weights([([_finding("d", "k", "low"), _finding("d", "k", "high")], 1)])
    assert twice.counts == {"d/k": [1, 1]} and set(twice.severities) == {"high"}


def test_the_weights_file_round_trips(tmp_path: Path) -> None:
    weights = fit_weights([([_finding("d", "k")], 1), ([_finding("d", "k")], 0)])
    path = weights.save(tmp_path / "w.json")
    assert FindingWeights.load(path) == weights
    assert json.loads(path.read_text(encoding="utf-8"))["counts"] == {"d/k": [1, 2]}
