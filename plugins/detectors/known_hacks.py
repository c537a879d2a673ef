"""``known_hack``: a rollout that closely repeats a confirmed hack never pays twice.

The worker hands over the known-hack corpus (transcripts of hacks reviewers
confirmed) in ``Evidence.known_hacks``; similarity is TF-IDF over character n-grams
with scikit-learn, fitted once per corpus.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel

from judge_service.contracts import Evidence
from judge_service.domain import Finding, Sample


class KnownHackDetector:
    """Flags a transcript whose cosine similarity to a confirmed hack reaches ``threshold``."""

    name = "known_hack"

    def __init__(self, *, threshold: float = 0.85) -> None:
        self.threshold = threshold
        self._source: Sequence[str] | None = None  # the Evidence corpus last indexed
        self._fitted: tuple[str, list[str], Any, Any] | None = None

    def _index(self, known: Sequence[str]) -> tuple[list[str], Any, Any] | None:
        """The fitted corpus. A batch hands every sample the same corpus object, so it is
        hashed and fitted once per batch (and refitted only when its content changes)."""
        if self._fitted is None or known is not self._source:
            corpus = [text for text in known if text.strip()]
            digest = hashlib.sha256("\x00".join(corpus).encode("utf-8", "replace")).hexdigest()
            if self._fitted is None or self._fitted[0] != digest:
                vectorizer = TfidfVectorizer(
                    analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True
                )
                matrix = vectorizer.fit_transform(corpus) if corpus else None
                self._fitted = (digest, corpus, vectorizer, matrix)
            self._source = known
        _, corpus, vectorizer, matrix = self._fitted
        return (corpus, vectorizer, matrix) if corpus else None

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        if not evidence.known_hacks:
            return []  # no corpus (the CLI audit): the transcript is never needed
        text = sample.transcript()
        index = self._index(evidence.known_hacks) if text.strip() else None
        if index is None:
            return []
        corpus, vectorizer, matrix = index
        similarities = linear_kernel(vectorizer.transform([text]), matrix)[0]
        best = int(similarities.argmax())
        score = float(similarities[best])
        if score < self.threshold:
            return []
        return [
            Finding(
                detector=self.name,
                kind="known_hack",
                severity="high",
                confidence=min(1.0, score),
                basis="output",
                evidence=f"completion matches known hack #{best} (cosine {score:.2f}): "
                f"`{corpus[best][:160]}`",
            )
        ]
