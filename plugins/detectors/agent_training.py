"""Fitting the agent head with scikit-learn: TF-IDF over the narration plus dense features.

Grouped cross-validation (no ``group_id`` on both sides) gives the out-of-fold scores,
the reported AUROC and the Platt calibration; the final model is fitted on every row and
exported as JSON terms (``narration.AgentModel``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judge_service_plugins.detectors.narration import AgentModel, analyze

MAX_TERMS = 6000


def _fit_one(texts: Sequence[str], dense: Any, labels: Any, c: float) -> tuple[Any, Any, Any, Any]:
    import numpy as np
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(
        analyzer=analyze, sublinear_tf=True, min_df=2, max_features=MAX_TERMS, dtype=np.float64
    )
    x_text = vectorizer.fit_transform(texts)
    mean = dense.mean(axis=0)
    scale = dense.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = hstack([x_text, csr_matrix((dense - mean) / scale)]).tocsr()
    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(x, labels)
    return vectorizer, mean, scale, model


def _decision(parts: tuple[Any, Any, Any, Any], texts: Sequence[str], dense: Any) -> Any:
    from scipy.sparse import csr_matrix, hstack

    vectorizer, mean, scale, model = parts
    x = hstack([vectorizer.transform(texts), csr_matrix((dense - mean) / scale)]).tocsr()
    return model.decision_function(x)


def grouped_agent_scores(
    texts: list[str],
    dense: list[list[float]],
    labels: list[int],
    groups: list[str],
    folds: int = 5,
    c: float = 0.5,
) -> list[float]:
    import numpy as np
    from sklearn.model_selection import GroupKFold

    d, y = np.asarray(dense, dtype=float), np.asarray(labels)
    out = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=min(folds, len(set(groups)))).split(d, y, groups):
        parts = _fit_one([texts[i] for i in train], d[train], y[train], c)
        out[test] = _decision(parts, [texts[i] for i in test], d[test])
    return out.tolist()


def fit_agent(
    texts: list[str],
    dense: list[list[float]],
    labels: list[int],
    groups: list[str],
    *,
    folds: int = 5,
    c: float = 0.5,
) -> AgentModel:
    import numpy as np
    from judge_service_plugins.detectors.agent_features import AGENT_NAMES
    from judge_service_plugins.detectors.calibration import platt_and_metrics

    if len(set(labels)) < 2:
        raise ValueError(
            "training the agent head needs both hacks (label 1) and honest rows (label 0)"
        )
    y = np.asarray(labels)
    oof = np.asarray(grouped_agent_scores(texts, dense, labels, groups, folds=folds, c=c))
    a, b, metrics = platt_and_metrics(oof, y, groups, folds=folds, c=c)
    vectorizer, mean, scale, model = _fit_one(texts, np.asarray(dense, dtype=float), y, c)
    vocabulary = vectorizer.vocabulary_
    weights = model.coef_[0]
    terms = {
        term: [round(float(vectorizer.idf_[i]), 5), round(float(weights[i]), 5)]
        for term, i in sorted(vocabulary.items())
    }
    n_text = len(vocabulary)
    metrics["terms"] = n_text
    return AgentModel(
        terms=terms,
        names=list(AGENT_NAMES),
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        coef=[round(float(v), 6) for v in weights[n_text:]],
        intercept=round(float(model.intercept_[0]), 6),
        platt_a=round(a, 6),
        platt_b=round(b, 6),
        metrics=metrics,
    )
