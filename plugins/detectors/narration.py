"""The agent head of the learned detector: a narration monitor with the rules as features.

TF-IDF over what the agent says (assistant text, reasoning, ``<think>`` blocks): word
1-2-grams and within-word character 3-5-grams, sublinear term frequency, l2-normalised,
plus dense features of the trajectory (``agent_features``: the rule detectors' verdicts by
family, and what the tools showed), in one logistic regression with a Platt calibration.

Stored as plain JSON (each kept term with its idf and weight), and scored here in pure
Python exactly as scikit-learn's ``TfidfVectorizer`` would, so loading it runs no pickled
code and scoring needs no scikit-learn.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_WORD = re.compile(r"[a-z][a-z0-9_']*|\d+")
_MAX_CHARS = 3000


def analyze(text: str) -> list[str]:
    """The terms of ``text``: ``w:`` word 1-2-grams and ``c:`` in-word character 3-5-grams."""
    words = _WORD.findall(text[:_MAX_CHARS].lower())
    terms = [f"w:{w}" for w in words]
    terms.extend(f"w:{a} {b}" for a, b in itertools.pairwise(words))
    for word in set(words):
        padded = f" {word} "
        size = len(padded)
        for n in (3, 4, 5):
            terms.extend(f"c:{padded[i : i + n]}" for i in range(max(1, size - n + 1)) if n <= size)
    return terms


@dataclass
class AgentModel:
    """``p = sigmoid(a * (w_text . tfidf(narration) + w . z(dense) + b) + c)``."""

    terms: dict[str, list[float]]  # term -> [idf, weight]
    names: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    platt_a: float = 1.0
    platt_b: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)

    def text_score(self, text: str) -> tuple[float, list[tuple[float, str]]]:
        """The narration's contribution to the logit, and the terms that raised it most."""
        counts = Counter(analyze(text))
        values: dict[str, float] = {}
        for term, count in counts.items():
            entry = self.terms.get(term)
            if entry is not None:
                values[term] = (1.0 + math.log(count)) * entry[0]
        norm = math.sqrt(sum(v * v for v in values.values()))
        if not norm:
            return 0.0, []
        parts = [(v / norm * self.terms[t][1], t) for t, v in values.items()]
        return sum(p for p, _ in parts), sorted(parts, reverse=True)[:5]

    def logit(self, text: str, dense: list[float]) -> tuple[float, list[tuple[float, str]]]:
        z, top = self.text_score(text)
        z += self.intercept
        for x, m, s, w in zip(dense, self.mean, self.scale, self.coef, strict=True):
            z += w * (x - m) / s
        return z, top

    def probability(self, text: str, dense: list[float], prior: float | None = None) -> float:
        z, _ = self.logit(text, dense)
        return self.calibrate(z, prior)

    def calibrate(self, z: float, prior: float | None = None) -> float:
        logit = self.platt_a * z + self.platt_b
        rate = float(self.metrics.get("hacks", 1)) / max(1.0, float(self.metrics.get("rows", 2)))
        if prior is not None and 0.0 < rate < 1.0:
            logit += math.log(prior / (1 - prior)) - math.log(rate / (1 - rate))
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, logit))))

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(asdict(self), separators=(",", ":")) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> AgentModel:
        from judge_service_plugins.detectors.agent_features import AGENT_NAMES

        data = json.loads(Path(path).read_text(encoding="utf-8"))
        model = cls(**data)
        if model.names != AGENT_NAMES:
            raise ValueError(
                f"{path}: the agent model's features differ from this version's; retrain it"
            )
        return model
