"""Near-duplicate detection for rubric items: TF-IDF over character n-grams, cosine similarity.

Character n-grams (within words) see "verify"/"verifies" and "booking ref"/"booking reference"
as close, which word tokens do not. The question stem every item shares ("Did the agent ...")
is stripped first, or it would make unrelated items look alike. Lexical, not semantic: it
catches rewordings, and a human reviews whatever gets through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

THRESHOLD = 0.45
_STEM = re.compile(
    r"^\s*(?:did|does|do|is|was|has|have|will|can)\s+(?:the\s+)?"
    r"(?:agent|assistant|response|model|report|answer|reply|output|it|they)\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Duplicate:
    """Candidate ``index`` was dropped: it is ``similarity``-close to ``of``."""

    index: int
    of: str
    similarity: float


def normalise(text: str) -> str:
    return _STEM.sub("", text.lower()).strip(" ?.!\t\n")


def deduplicate(
    candidates: Sequence[str], existing: Sequence[str], *, threshold: float = THRESHOLD
) -> tuple[list[int], list[Duplicate]]:
    """Indices of candidates to keep (in order) and the duplicates dropped.

    A candidate is dropped when it is at least ``threshold``-similar to an existing text or
    to a candidate kept before it.
    """
    if not candidates:
        return [], []
    # imported here: sklearn takes ~1.4 s to import, and the app imports this module at start
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    texts = [normalise(t) for t in [*existing, *candidates]]
    try:
        vectors = TfidfVectorizer(
            analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True
        ).fit_transform(texts)
    except ValueError:  # nothing but blanks: no vocabulary to compare on
        return list(range(len(candidates))), []
    similarity = cosine_similarity(vectors)
    offset = len(existing)
    references = list(range(offset))
    kept: list[int] = []
    dropped: list[Duplicate] = []
    originals = [*existing, *candidates]
    for index in range(len(candidates)):
        row = offset + index
        if not texts[row]:
            dropped.append(Duplicate(index, "", 1.0))
            continue
        best = max(references, key=lambda other: similarity[row, other], default=None)
        if best is not None and similarity[row, best] >= threshold:
            dropped.append(
                Duplicate(index, originals[best], round(float(similarity[row, best]), 3))
            )
            continue
        kept.append(index)
        references.append(row)
    return kept, dropped
