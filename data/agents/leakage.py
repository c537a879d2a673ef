"""Leakage check: how far a bag-of-words model and length alone get on the corpus.

    .venv/bin/python data/agents/leakage.py

Prints grouped 5-fold AUROCs of TF-IDF + logistic regression on the completion text alone,
on the prompt alone, and of the completion's length. If the first approached 1.0, the corpus
would teach template wording instead of behaviour.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline

HERE = Path(__file__).resolve().parent


def text(value: object) -> str:
    """A prompt or completion as flat text (message contents, reasoning and tool calls)."""
    if isinstance(value, str):
        return value
    parts = []
    for m in value:  # type: ignore[union-attr]
        parts.append(str(m.get("content") or ""))
        parts.append(str(m.get("reasoning_content") or ""))
        for c in m.get("tool_calls") or []:
            parts.append(c["function"]["name"] + " " + str(c["function"]["arguments"]))
    return "\n".join(parts)


def surface(value: object) -> str:
    """Only the form of a completion: roles, tool names, argument keys, where narration sits."""
    if isinstance(value, str):
        return "plain_text"
    out = []
    for m in value:  # type: ignore[union-attr]
        out.append("role_" + m["role"])
        if m.get("reasoning_content"):
            out.append("has_reasoning")
        if "<think>" in str(m.get("content") or ""):
            out.append("has_think")
        if "```" in str(m.get("content") or ""):
            out.append("has_fence")
        for c in m.get("tool_calls") or []:
            out.append("tool_" + c["function"]["name"].replace(".", "_"))
            args = json.loads(c["function"]["arguments"])
            out.extend("arg_" + k for k in args)
    return " ".join(out)


def actions(value: object) -> str:
    """Tool calls and tool results only: what the agent did, without what it said."""
    if isinstance(value, str):
        return ""
    parts = []
    for m in value:  # type: ignore[union-attr]
        for c in m.get("tool_calls") or []:
            parts.append(c["function"]["name"] + " " + str(c["function"]["arguments"]))
        if m["role"] == "tool":
            parts.append(str(m.get("content") or ""))
    return "\n".join(parts)


def narration(value: object) -> str:
    """What the assistant said before its last message (reasoning, <think>, text), no code."""
    if isinstance(value, str):
        return ""
    parts = []
    for m in value[:-1]:  # type: ignore[index]
        if m["role"] == "assistant":
            parts.append(str(m.get("reasoning_content") or ""))
            parts.append(re.sub(r"```.*?```", "", str(m.get("content") or ""), flags=re.S))
    return "\n".join(parts)


def final(value: object) -> str:
    if isinstance(value, str):
        return value
    return str(value[-1].get("content") or "")  # type: ignore[index]


def grouped_auroc(docs: list[str], labels: list[int], groups: list[str]) -> float:
    scores = [0.0] * len(docs)
    for train, test in GroupKFold(n_splits=5).split(docs, labels, groups):
        model = make_pipeline(
            TfidfVectorizer(
                ngram_range=(1, 2), min_df=2, sublinear_tf=True, token_pattern=r"(?u)\b\w+\b"
            ),
            LogisticRegression(max_iter=2000, C=1.0),
        )
        model.fit([docs[i] for i in train], [labels[i] for i in train])
        for i, p in zip(test, model.predict_proba([docs[i] for i in test])[:, 1], strict=True):
            scores[i] = p
    return roc_auc_score(labels, scores)


def main(path: Path = HERE / "agent_trajectories.jsonl") -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    labels = [r["label"] for r in rows]
    groups = [r["group_id"] for r in rows]
    completions = [text(r["completion"]) for r in rows]
    prompts = [text(r["prompt"]) for r in rows]
    print(f"rows {len(rows)}, clean {labels.count(0) / len(rows):.1%}")
    print(
        f"tfidf+logreg, completion text, grouped 5-fold AUROC: "
        f"{grouped_auroc(completions, labels, groups):.3f}"
    )
    for name, view in [
        ("tool calls and results", actions),
        ("narration", narration),
        ("final message", final),
    ]:
        docs = [view(r["completion"]) for r in rows]
        print(
            f"tfidf+logreg, {name} only, grouped 5-fold AUROC: "
            f"{grouped_auroc(docs, labels, groups):.3f}"
        )
    forms = [surface(r["completion"]) for r in rows]
    print(
        "tfidf+logreg, surface only (roles, tool names, argument keys, narration place), "
        f"grouped 5-fold AUROC: {grouped_auroc(forms, labels, groups):.3f}"
    )
    print(
        f"tfidf+logreg, prompt text, grouped 5-fold AUROC: "
        f"{grouped_auroc(prompts, labels, groups):.3f}"
    )
    lengths = [len(c) for c in completions]
    print(f"completion length (chars) AUROC: {roc_auc_score(labels, lengths):.3f}")
    print(
        f"number of messages AUROC: "
        f"{roc_auc_score(labels, [len(r['completion']) for r in rows]):.3f}"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "agent_trajectories.jsonl")
