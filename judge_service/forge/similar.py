"""Near-duplicate merging and family clustering, with scikit-learn.

Near duplicates: TF-IDF over character 3-5-grams (within word boundaries) of the normalised
text, cosine similarity. Two requests at or above :data:`DUPLICATE_THRESHOLD` (0.9) are the
same task: that merges case, punctuation, typos and small rewordings ("How do I reset my
password?" / "how do i reset my password??") but keeps "reset my password" apart from "reset
my PIN". Families: agglomerative clustering (average linkage, cosine distance) over word
TF-IDF without English stop words, cut at :data:`FAMILY_DISTANCE` (0.85); each family is named
by the top terms of its mean vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from judge_service.forge.text import normalise

DUPLICATE_THRESHOLD = 0.9
FAMILY_DISTANCE = 0.85
NAME_TERMS = 3


def duplicate_of(texts: Sequence[str], threshold: float = DUPLICATE_THRESHOLD) -> list[int]:
    """For each text, the index of the first earlier text it duplicates (itself if none).

    Greedy in input order, so the first occurrence is the one kept: deterministic."""
    if not texts:
        return []
    normalised = [normalise(t) or t for t in texts]
    try:
        vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5)).fit_transform(normalised)
    except ValueError:  # every text shorter than a trigram: compare exactly
        first: dict[str, int] = {}
        return [first.setdefault(t, i) for i, t in enumerate(normalised)]
    similarity = cosine_similarity(vectors)
    keepers: list[int] = []
    owner: list[int] = []
    for index in range(len(texts)):
        match = next((k for k in keepers if similarity[index, k] >= threshold), None)
        if match is None:
            keepers.append(index)
            match = index
        owner.append(match)
    return owner


@dataclass(frozen=True)
class Family:
    """Indices of the texts in one family, and the family's top terms."""

    members: list[int]
    terms: list[str]

    @property
    def name(self) -> str:
        return " / ".join(self.terms) or "misc"


def _top_terms(matrix: np.ndarray, vocabulary: np.ndarray, rows: list[int]) -> list[str]:
    weights = np.asarray(matrix[rows].mean(axis=0)).ravel()
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], vocabulary[i]))
    return [str(vocabulary[i]) for i in order[:NAME_TERMS] if weights[i] > 0]


def families(texts: Sequence[str], distance: float = FAMILY_DISTANCE) -> list[Family]:
    """Cluster the texts into families, largest first (ties: first member first)."""
    if not texts:
        return []
    vectorizer = TfidfVectorizer(stop_words="english", ngram_range=(1, 2), sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform([normalise(t) for t in texts]).toarray()
    except ValueError:  # nothing but stop words
        return [Family(list(range(len(texts))), [])]
    vocabulary = vectorizer.get_feature_names_out()
    if len(texts) == 1:
        labels = [0]
    else:
        empty = ~matrix.any(axis=1)
        matrix[empty, 0] += 1e-9  # cosine distance is undefined for a zero vector
        labels = AgglomerativeClustering(
            n_clusters=None,
            metric="cosine",
            linkage="average",
            distance_threshold=distance,
        ).fit_predict(matrix)
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        groups.setdefault(int(label), []).append(index)
    found = [Family(rows, _top_terms(matrix, vocabulary, rows)) for rows in groups.values()]
    return sorted(found, key=lambda f: (-len(f.members), f.members[0]))
