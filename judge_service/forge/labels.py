"""How well the failure signs match the labels that traces carry, if they carry any.

A trace is labelled by ``metadata.outcome`` (``success`` or ``failure``) or, failing that,
a numeric ``metadata.reward`` (at least 0.5 is a success). This is how a user checks the forge
on their own labelled traces: per sign, how many traces it marked and how many of those
failed (precision); for "any sign", precision, recall and balanced accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.traces.conversation import Trace

SUCCESS_REWARD = 0.5


def label(trace: Trace) -> bool | None:
    """``True`` for a failed trace, ``False`` for a successful one, ``None`` if unlabelled."""
    outcome = trace.metadata.get("outcome")
    if isinstance(outcome, str) and outcome.lower() in ("success", "failure"):
        return outcome.lower() == "failure"
    reward = trace.metadata.get("reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        return float(reward) < SUCCESS_REWARD
    return None


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def sign_report(
    traces: Sequence[Trace], signs: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any] | None:
    """Signs against labels; ``None`` when no trace is labelled."""
    labelled = {t.id: failed for t in traces if (failed := label(t)) is not None}
    if not labelled:
        return None
    failed_ids = {i for i, f in labelled.items() if f}
    kinds: dict[str, set[str]] = {}
    for trace_id, found in signs.items():
        if trace_id in labelled:
            for sign in found:
                kinds.setdefault(str(sign["kind"]), set()).add(trace_id)
    flagged = {t for t, found in signs.items() if found and t in labelled}
    hits = len(flagged & failed_ids)
    recall = _ratio(hits, len(failed_ids))
    specificity = _ratio(len(set(labelled) - failed_ids - flagged), len(labelled) - len(failed_ids))
    balanced = (
        round((recall + specificity) / 2, 4)
        if recall is not None and specificity is not None
        else None
    )
    return {
        "labelled": len(labelled),
        "failed": len(failed_ids),
        "any_sign": {
            "flagged": len(flagged),
            "precision": _ratio(hits, len(flagged)),
            "recall": recall,
            "balanced_accuracy": balanced,
        },
        "by_sign": {
            kind: {"flagged": len(ids), "precision": _ratio(len(ids & failed_ids), len(ids))}
            for kind, ids in sorted(kinds.items())
        },
    }
