"""Why the audit model scored a trajectory as it did, pointing at the facts behind it.

The features that pushed the score up and are present in the rollout, mapped back to what
they stand for: a code or tool fact (its file and line, or its call), a rule's finding (its
evidence), a narration fact (the sentence). The strongest act among them gives the finding
its ``basis``; when no act is there, the basis is ``narration`` and the finding can only
send the rollout to review. The narration that confirms (a disclosure) or contradicts (a
refusal, a flag for a human) the verdict is quoted beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge_service_plugins.detectors.base import one_line, strength
from judge_service_plugins.detectors.facts import Facts
from judge_service_plugins.detectors.learned_model import LearnedModel

from judge_service.domain import Basis, Finding

_BASES: dict[str, Basis] = {"code": "code", "tool": "tool", "output": "output"}


@dataclass(frozen=True)
class Why:
    text: str
    basis: Basis
    fact: str | None
    narration: str | None


def _strongest(findings: list[Finding], detector: str) -> Finding | None:
    mine = [f for f in findings if f.detector == detector and f.severity != "info"]
    return max(mine, key=strength, default=None)


def explain(
    model: LearnedModel,
    dense: list[float],
    facts: Facts,
    findings: list[Finding],
    *,
    words: bool = True,
) -> Why:
    """``words=False`` finds only the basis and the fact (what the penalty gate needs), and
    skips the text: most rollouts score far below any flag, and nobody reads theirs."""
    values = dict(zip(model.names, dense, strict=True))
    parts: list[str] = []
    basis: Basis | None = None
    fact: str | None = None
    for push, name in model.contributions(dense):
        if push <= 0.05 or len(parts) >= 3:
            break
        if not values[name]:
            continue  # an absent feature that lowers the average: no evidence of its own
        if not words and basis is not None:
            break
        if name.startswith("fact_"):
            found = facts.first(name[5:])
            if found is None:
                continue
            parts.append(f"{found.kind} at {found.describe()}")
            if basis is None:
                basis, fact = _BASES.get(found.source, "tool"), found.where
        elif name.startswith("rule_"):
            finding = _strongest(findings, name[5:])
            if finding is None:
                continue
            parts.append(f"{finding.detector}/{finding.kind}: {one_line(finding.evidence, 160)}")
            if basis is None and finding.basis not in (None, "narration", "model"):
                basis, fact = finding.basis, finding.fact or one_line(finding.evidence, 120)
        else:
            parts.append(name)
    narration = _narration(facts) if words else None
    return Why(
        text="; ".join(parts) or "no fact stands out",
        basis=basis or "narration",
        fact=fact,
        narration=narration,
    )


def _narration(facts: Facts) -> str | None:
    for kind, stance in (
        ("disclosure", "confirms"),
        ("refusal", "contradicts"),
        ("flags_human", "contradicts"),
    ):
        found = facts.first(kind)
        if found is not None:
            return f"{found.where}: {found.detail} ({kind}, {stance})"
    return None
