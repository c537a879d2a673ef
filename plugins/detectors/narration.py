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

import functools
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


@functools.lru_cache(maxsize=65536)
def _char_grams(word: str) -> tuple[str, ...]:
    """``c:`` character 3-5-grams of `` word `` (cached: narration reuses its words)."""
    padded = f" {word} "
    size = len(padded)
    return tuple(
        f"c:{padded[i : i + n]}" for n in (3, 4, 5) if n <= size for i in range(size - n + 1)
    )


def _words(text: str) -> list[str]:
    return _WORD.findall(text[:_MAX_CHARS].lower())


def analyze(text: str) -> list[str]:
    """The terms of ``text``: ``w:`` word 1-2-grams and ``c:`` in-word character 3-5-grams.

    Character n-grams count once per distinct word (as scikit-learn's ``char_wb`` would on
    the set of words), which keeps long narrations cheap.
    """
    words = _words(text)
    terms = [f"w:{w}" for w in words]
    terms.extend(f"w:{a} {b}" for a, b in itertools.pairwise(words))
    for word in set(words):
        terms.extend(_char_grams(word))
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

    def __post_init__(self) -> None:
        self._known: dict[str, tuple[str, ...]] = {}  # word -> its char n-grams in the vocabulary

    def _terms_of(self, text: str) -> list[str]:
        """``analyze(text)`` less the terms outside the vocabulary (which count for nothing)."""
        words = _words(text)
        terms = self.terms
        out = [t for t in (f"w:{w}" for w in words) if t in terms]
        out.extend(t for t in (f"w:{a} {b}" for a, b in itertools.pairwise(words)) if t in terms)
        known = self._known
        for word in set(words):
            grams = known.get(word)
            if grams is None:
                grams = tuple(g for g in _char_grams(word) if g in terms)
                if len(known) < 100_000:
                    known[word] = grams
            out.extend(grams)
        return out

    def text_score(self, text: str) -> float:
        """The narration's contribution to the logit: weights . l2-normalised sublinear TF-IDF."""
        terms = self.terms
        squares = dot = 0.0
        for term, count in Counter(self._terms_of(text)).items():
            entry = terms.get(term)
            if entry is not None:
                value = entry[0] if count == 1 else (1.0 + math.log(count)) * entry[0]
                squares += value * value
                dot += value * entry[1]
        return dot / math.sqrt(squares) if squares else 0.0

    def logit(self, text: str, dense: list[float]) -> float:
        z = self.text_score(text) + self.intercept
        for x, m, s, w in zip(dense, self.mean, self.scale, self.coef, strict=True):
            z += w * (x - m) / s
        return z

    def probability(self, text: str, dense: list[float], prior: float | None = None) -> float:
        return self.calibrate(self.logit(text, dense), prior)

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
