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
import operator
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judge_service_plugins.detectors.calibration import calibrate, load_checked

_not_none = functools.partial(operator.is_not, None)
_WORD = re.compile(r"[a-z][a-z0-9_']*|\d+")
_MAX_CHARS = 3000
_ONE = 1


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
        # Scoring tables by term id: idf squared and idf times weight (a term counted once),
        # and the word terms keyed so that ``map`` can look a text's words up in C.
        ids = {term: i for i, term in enumerate(self.terms)}
        self._ids = ids
        self._sq = [idf * idf for idf, _ in self.terms.values()]
        self._dw = [idf * weight for idf, weight in self.terms.values()]
        self._unigrams = {t[2:]: i for t, i in ids.items() if t[:2] == "w:" and " " not in t}
        self._bigrams = {
            tuple(t[2:].split(" ", 1)): i for t, i in ids.items() if t[:2] == "w:" and " " in t
        }
        self._known: dict[str, tuple[int, ...]] = {}  # word -> its char n-grams' ids

    def _grams(self, word: str) -> tuple[int, ...]:
        ids = self._ids
        grams = tuple(ids[g] for g in _char_grams(word) if g in ids)
        if len(self._known) < 100_000:
            self._known[word] = grams
        return grams

    def _term_ids(self, text: str) -> list[int]:
        """Ids of ``analyze(text)``'s terms in the vocabulary (the others count for nothing)."""
        words = _words(text)
        out = list(filter(_not_none, map(self._unigrams.get, words)))
        out.extend(filter(_not_none, map(self._bigrams.get, itertools.pairwise(words))))
        known = self._known
        for word in set(words):
            grams = known.get(word)
            out.extend(self._grams(word) if grams is None else grams)
        return out

    def text_score(self, text: str) -> float:
        """The narration's contribution to the logit: weights . l2-normalised sublinear TF-IDF.

        Every term is first summed as if it occurred once (``sum(map(...))`` runs in C);
        the few that occur more often are then corrected to ``idf * (1 + log(count))``.
        """
        counts = Counter(self._term_ids(text))
        if not counts:
            return 0.0
        sq, dw = self._sq, self._dw
        squares = sum(map(sq.__getitem__, counts))
        dot = sum(map(dw.__getitem__, counts))
        # The repeated terms, picked out in C (most terms occur once), in the counter's order.
        for i, count in itertools.compress(counts.items(), map(_ONE.__lt__, counts.values())):
            factor = 1.0 + math.log(count)
            squares += sq[i] * (factor * factor - 1.0)
            dot += dw[i] * (factor - 1.0)
        return dot / math.sqrt(squares) if squares > 0 else 0.0

    def logit(self, text: str, dense: list[float]) -> float:
        z = self.text_score(text) + self.intercept
        for x, m, s, w in zip(dense, self.mean, self.scale, self.coef, strict=True):
            z += w * (x - m) / s
        return z

    def probability(self, text: str, dense: list[float], prior: float | None = None) -> float:
        return self.calibrate(self.logit(text, dense), prior)

    def calibrate(self, z: float, prior: float | None = None) -> float:
        return calibrate(z, self.platt_a, self.platt_b, self.metrics, prior)

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(asdict(self), separators=(",", ":")) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> AgentModel:
        from judge_service_plugins.detectors.agent_features import AGENT_NAMES

        return load_checked(cls, path, AGENT_NAMES, "the agent model's")
