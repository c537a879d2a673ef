"""Rubric mining: from a run's failed, flagged and disputed rollouts to proposed yes/no items.

Spotting a mistake in hindsight is easier than specifying success up front, so a model reads
the rollouts that went wrong (with a few good ones for contrast) and proposes checklist items,
citing the rollouts that show each. No storage here: rollouts come in, a ``propose`` function
stands for the model, and proposals come out, deduplicated and with unknown citations dropped.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge_service.domain import Outcome, Rubric, Sample
from judge_service.review.decisions import criterion_id
from judge_service.review.mining_prompt import build_messages, proposal_schema
from judge_service.review.similarity import THRESHOLD, deduplicate

#: ``propose(messages, schema)`` -> the model's reply, a dict valid under ``schema``.
Propose = Callable[[list[dict[str, str]], dict[str, Any]], Awaitable[dict[str, Any]]]
MINED_TAG = "mined"


@dataclass(frozen=True)
class MiningRollout:
    """A scored rollout of the run, under the ``ref`` the model cites it by."""

    ref: str
    batch_id: str
    sample: Sample
    outcome: Outcome


@dataclass(frozen=True)
class ProposedItem:
    criterion: dict[str, Any]
    rationale: str
    cited: list[str]
    dropped_citations: list[str]


@dataclass
class MiningResult:
    items: list[ProposedItem] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    contrast: list[str] = field(default_factory=list)
    proposed: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "considered": len(self.failures) + len(self.contrast),
            "failures": self.failures,
            "contrast": self.contrast,
            "proposed": self.proposed,
            "kept": len(self.items),
            "duplicates": self.duplicates,
            "dropped_citations": sorted({c for i in self.items for c in i.dropped_citations}),
        }


def refs(keys: Sequence[tuple[str, str]]) -> list[str]:
    """Citation refs for ``(batch_id, sample_id)`` pairs: the sample id where it is unique in
    the run, ``<batch prefix>/<sample id>`` where batches reuse it."""
    counts = Counter(sample_id for _, sample_id in keys)
    return [sid if counts[sid] == 1 else f"{bid[:8]}/{sid}" for bid, sid in keys]


def pick(
    rollouts: Sequence[MiningRollout],
    *,
    flagged: float = 0.5,
    split: float = 0.5,
    limit: int = 12,
    contrast: int = 3,
) -> tuple[list[MiningRollout], list[MiningRollout]]:
    """The rollouts to show: suspected hacks, then split panels, then the lower half by reward
    (ties included, so a small run with even rewards still yields material); and up to
    ``contrast`` of the best-rewarded others. Masked rollouts are failures of scoring, not of
    the agent, so they count only when flagged."""
    hacks = sorted(
        (r for r in rollouts if r.outcome.hack_score >= flagged),
        key=lambda r: -r.outcome.hack_score,
    )
    scored = [r for r in rollouts if r.outcome.valid and r.outcome.reward is not None]
    splits = sorted(
        (r for r in scored if r.outcome.agreement is not None and r.outcome.agreement < split),
        key=lambda r: r.outcome.agreement or 0.0,
    )
    low: list[MiningRollout] = []
    if scored:
        median = statistics.median(r.outcome.reward or 0.0 for r in scored)
        low = sorted(
            (r for r in scored if (r.outcome.reward or 0.0) <= median),
            key=lambda r: r.outcome.reward or 0.0,
        )
    failures: list[MiningRollout] = []
    seen: set[str] = set()
    for rollout in [*hacks, *splits, *low]:
        if rollout.ref not in seen and len(failures) < limit:
            failures.append(rollout)
            seen.add(rollout.ref)
    honest = [r for r in failures if r.outcome.valid and r.outcome.hack_score < flagged]
    worst = max((r.outcome.reward or 0.0 for r in honest), default=0.0)  # hacked rewards lie
    good = sorted(
        (
            r
            for r in scored
            if r.ref not in seen
            and r.outcome.hack_score < flagged
            and (r.outcome.reward or 0) > worst
        ),
        key=lambda r: -(r.outcome.reward or 0.0),
    )
    return failures, good[:contrast]


def parse(reply: dict[str, Any], known: set[str], taken: set[str]) -> list[ProposedItem]:
    """The reply's items as criteria; citations of rollouts not in the run are dropped."""
    items = []
    for raw in reply.get("items") or []:
        text = " ".join(str(raw.get("text", "")).split())
        if not text:
            continue
        importance = min(3, max(1, int(raw.get("importance") or 1)))
        sign = -1 if raw.get("polarity") == "bad" else 1
        cited = [str(c).strip() for c in raw.get("cited") or []]
        cid = criterion_id(text, taken)
        taken.add(cid)
        items.append(
            ProposedItem(
                criterion={
                    "id": cid,
                    "text": text,
                    "weight": float(sign * importance),
                    "tags": [MINED_TAG],
                },
                rationale=str(raw.get("rationale", "")).strip(),
                cited=list(dict.fromkeys(c for c in cited if c in known)),
                dropped_citations=[c for c in cited if c not in known],
            )
        )
    return items


async def mine(
    rubric: Rubric,
    rollouts: Sequence[MiningRollout],
    propose: Propose,
    *,
    max_items: int = 5,
    known_texts: Sequence[str] = (),
    bounded: bool = False,
    max_chars: int = 1500,
    threshold: float = THRESHOLD,
) -> MiningResult:
    """Propose up to ``max_items`` new criteria for ``rubric`` from ``rollouts``.

    ``known_texts`` are items already proposed (pending) or rejected: a proposal close to
    one of them, to an existing criterion, or to an earlier proposal is dropped.
    """
    failures, good = pick(rollouts, limit=8 if bounded else 12)
    result = MiningResult(failures=[r.ref for r in failures], contrast=[r.ref for r in good])
    if not failures:
        return result
    messages = build_messages(rubric, failures, good, max_items=max_items, max_chars=max_chars)
    reply = await propose(messages, proposal_schema(max_items, bounded=bounded))
    proposals = parse(reply, {r.ref for r in rollouts}, {c.id for c in rubric.criteria})
    result.proposed = len(proposals)
    existing = [c.text for c in rubric.criteria] + [t for t in known_texts if t]
    kept, dropped = deduplicate(
        [p.criterion["text"] for p in proposals], existing, threshold=threshold
    )
    result.items = [proposals[i] for i in kept][:max_items]
    result.duplicates = [
        {
            "text": proposals[d.index].criterion["text"],
            "similar_to": d.of,
            "similarity": d.similarity,
        }
        for d in dropped
    ]
    return result
