"""Repeats of one goal across traces, merged by meaning and kept apart by entity.

Two goals are one when their user turns mean the same (embedding similarity at or above the
embedder's threshold) and they name no conflicting entities. The write tools a goal called
count as entities of their own kind: a goal that returned items and one that exchanged them
are two goals however alike their words, while a run that also made a stray write, or made
none, still joins its goal. Where the two changed the same record, though, the tools called
on it say what each agent did, not what its user asked for: one of them did the wrong thing
to the right record (cancelled the order it was asked to change), and it stays with its goal
for its words to decide (on the real retail runs, 4 goals of 114 had a run split off so):
its words alone, since a record that both changed in different ways lowers the bar for
neither (:func:`_record_bonus`). So
do the entities its writes touched (``state:order_id=A1``):
the same change to another record is another goal. Entities conflict when both
goals name entities of one kind and none in common: ``#W1`` against ``#W2``, one e-mail
against another. An entity's kind is its shape: its letters and symbols as they are, each run
of digits as its length (``#W6067464`` is ``#W#7``, ``credit_card_41`` is ``credit_card_#2``,
an e-mail is ``@``). So a goal that names the order and one that doesn't can still merge,
while the same request about another order, user or product cannot. Who asks is a handle
too (``who:<id>``, :mod:`judge_service.traces.identity`): the id that the agent's lookup with
the user's own words answered, so two people's goals never merge however they named
themselves, and one person's e-mail in one run and name in another still do. So is the world
a conversation began in (``start:…``, :mod:`judge_service.forge.start_state`): the same read
before any write, answered differently, means two goals however alike their words. And so is
what the user asked for in the tools' terms (``said:<field>=<value>``,
:mod:`judge_service.traces.requested`): "canister" against "robotic", where a tool's data holds
both under one field, is two goals.

Clustering is greedy and deterministic: a goal joins the task holding its most similar
compatible goal, else starts a task. A task that holds two goals no handle told apart is
then cut by the end states its runs reached (:mod:`judge_service.forge.camps`).

A later goal of a conversation ("Also, can you …") is a task of its own when it is a goal of
its own: seen without the earlier one too. When, across the repeats, two goals come in the same
conversations (they share at least :data:`FOLD_MIN_SHARED` traces and half of all the traces
either is in), they are the two parts of one compound goal, and :func:`fold_companions` makes
them one task: the repeats then agree however each run ordered or bundled the parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from judge_service.forge.start_state import PREFIX as START
from judge_service.traces.requested import PREFIX as SAID

_DIGITS = re.compile(r"\d+")
FOLD_MIN_SHARED = 2
#: How much less similar two goals that wrote the same record may be. On the retail corpus
#: with every similarity lowered by 0.1 (less alike phrasing), tasks per goal stay at 1.03
#: with it and rise to 1.30 without (bench notes in docs/benchmarks.md).
SHARED_RECORD_BONUS = 0.2
FOLD_JACCARD = 0.5


def entity_kind(token: str) -> str:
    if "@" in token:
        return "@"
    if token.startswith("state:"):  # an entity a write touched: its id field is its kind
        return token.split("=", 1)[0]
    if token.startswith(START):  # a first read: its tool and arguments are its kind
        return token.rsplit("=", 1)[0]
    if token.startswith(SAID):  # a value the user asked for: its field is its kind
        return token.split("=", 1)[0]
    if ":" in token:  # a typed token: name:…, write:…
        return token.split(":", 1)[0] + ":"
    return _DIGITS.sub(lambda m: f"#{len(m.group(0))}", token.lower())


def _kinds(entities: Sequence[str]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for token in entities:
        kinds.setdefault(entity_kind(token), set()).add(token.lower())
    return kinds


#: The kind of the write tools a goal called (``write:<tool>``).
WRITE_KIND = "write:"


def conflict(a: dict[str, set[str]], b: dict[str, set[str]], *, same_record: bool = False) -> bool:
    """Whether two goals' entities (by kind) rule out their being one goal. Goals whose writes
    changed the same record (``same_record``) may have called other write tools on it."""
    return any(
        a[kind].isdisjoint(b[kind])
        for kind in a.keys() & b.keys()
        if not (same_record and kind == WRITE_KIND)
    )


def _record_bonus(a: dict[str, set[str]], b: dict[str, set[str]], *, same_record: bool) -> float:
    """:data:`SHARED_RECORD_BONUS` where two goals (their entities by kind, as
    :func:`conflict` takes them) wrote the same record, unless each called write tools and
    none in common: then the record says only that both runs touched it, not that they were
    asked the same (cancel the order, change its items), and their words alone must be
    alike. On the real retail runs this keeps 4 goals of 114 apart that the record alone
    had merged."""
    if not same_record:
        return 0.0
    if WRITE_KIND in a and WRITE_KIND in b and a[WRITE_KIND].isdisjoint(b[WRITE_KIND]):
        return 0.0
    return SHARED_RECORD_BONUS


def merge_goals(
    similarity: np.ndarray, entities: Sequence[Sequence[str]], threshold: float
) -> list[list[int]]:
    """Groups of goal indices, each a task, in order of their first goal.

    Goals with more handles go first: a run that wrote nothing (a false claim, a transfer)
    names few entities and would join whatever it resembles, so it joins once the
    well-identified runs have formed their tasks. Two goals whose writes touched the same
    record (a shared ``state:`` handle) need :data:`SHARED_RECORD_BONUS` less similarity:
    people phrase one goal more differently than a template does, and the record is the
    stronger evidence; the write tools they called on it do not keep them apart (module
    docstring), though with none in common the record lowers no bar (:func:`_record_bonus`)."""
    kinds = [_kinds(e) for e in entities]
    records = [{e for e in ents if e.startswith("state:")} for ents in entities]
    named = [[e for e in ents if not e.startswith(START)] for ents in entities]
    order = sorted(range(len(entities)), key=lambda i: (-len(_kinds(named[i])), -len(named[i]), i))
    groups: list[list[int]] = []
    for index in order:
        best, best_score = None, 0.0
        for group_index, members in enumerate(groups):
            score = max(
                float(similarity[index, m])
                + _record_bonus(
                    kinds[index], kinds[m], same_record=bool(records[index] & records[m])
                )
                for m in members
            )
            if score < threshold or (best is not None and score <= best_score):
                continue  # on a tie the earlier task keeps it
            if any(
                conflict(kinds[index], kinds[m], same_record=bool(records[index] & records[m]))
                for m in members
            ):
                continue
            best, best_score = group_index, score
        if best is None:
            groups.append([index])
        else:
            groups[best].append(index)
    return sorted((sorted(g) for g in groups), key=lambda g: g[0])


def fold_companions(groups: Sequence[Sequence[int]], trace_of: Sequence[str]) -> list[list[int]]:
    """``groups`` with the parts of compound goals joined (module docstring)."""
    traces = [{trace_of[i] for i in g} for g in groups]
    parent = list(range(len(groups)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_trace: dict[str, list[int]] = {}
    for index, members in enumerate(traces):
        for trace in members:
            by_trace.setdefault(trace, []).append(index)
    for indices in by_trace.values():
        for a in indices:
            for b in indices:
                if a >= b or root(a) == root(b):
                    continue
                shared = len(traces[a] & traces[b])
                if shared >= FOLD_MIN_SHARED and shared >= FOLD_JACCARD * len(
                    traces[a] | traces[b]
                ):
                    parent[root(b)] = root(a)
    folded: dict[int, list[int]] = {}
    for index, members in enumerate(groups):
        folded.setdefault(root(index), []).extend(members)
    return sorted((sorted(g) for g in folded.values()), key=lambda g: g[0])
