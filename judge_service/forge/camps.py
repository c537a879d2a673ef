"""One task, one reference: a merged task whose runs reached two consensuses is two goals.

Goals of one person that no handle tells apart ("a brighter lamp" against "a less bright one",
said in words no tool holds) merge by their words. Their end states still differ, but so do
a failed repeat's, and most failed runs show no sign: one run with another end state says
nothing. Several do:

- **Two camps.** Where two end states of a task are each reached by at least
  :data:`CAMP_MIN_CLEAN` runs without a failure sign (each could be the consensus), the task
  is two goals. It is cut into one task per camp, each other run going with the camp whose
  runs its words are most like.
- **Clean dissenters.** Where one end state is such a camp and at least
  :data:`CAMP_MIN_CLEAN` runs without a failure sign reached other end states, and those runs'
  words are more like each other's than like the rest of the task's, and as like each
  other's as the camp's runs are, they are another goal asked alike: a task of their own
  (its reference is then proposed from their evidence). Failed repeats of the camp's goal
  are less alike than that: each went wrong its own way, and its user said so in its own
  words.

A run's end state in a task is that of its goals there together (a compound goal's parts);
"nothing changed" is an end state like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from judge_service.traces.entities import canonical

#: Clean runs an end state, or a set of dissenting runs, needs to stand as a goal of its own:
#: as many as a consensus needs.
CAMP_MIN_CLEAN = 2


def _mean(
    similarity: np.ndarray, a: Sequence[int], b: Sequence[int], apart: Sequence[str]
) -> float:
    pairs = [float(similarity[i, j]) for i in a for j in b if apart[i] != apart[j]]
    return sum(pairs) / len(pairs) if pairs else 0.0


def _cut(
    runs: dict[str, list[int]],
    states: Sequence[Mapping[str, Any]],
    clean: Sequence[bool],
    similarity: np.ndarray,
    trace_of: Sequence[str],
) -> list[list[int]]:
    """One task's members, cut into the goals its runs show (module docstring)."""
    by_state: dict[str, list[str]] = {}
    for trace, indices in runs.items():
        state: dict[str, Any] = {}
        for i in indices:
            state.update(states[i])
        by_state.setdefault(canonical(state), []).append(trace)
    spotless = {t for t, indices in runs.items() if all(clean[i] for i in indices)}
    camps = [
        [i for t in traces for i in runs[t]]
        for traces in by_state.values()
        if len(spotless.intersection(traces)) >= CAMP_MIN_CLEAN
    ]
    members = [i for indices in runs.values() for i in indices]
    if len(camps) == 1:
        camp = set(camps[0])
        dissent = [i for t in spotless if runs[t][0] not in camp for i in runs[t]]
        dissenting = set(dissent)
        rest = [i for i in members if i not in dissenting]
        apart = {trace_of[i] for i in dissent}
        alike = _mean(similarity, dissent, dissent, trace_of)
        if (
            len(apart) >= CAMP_MIN_CLEAN
            and alike > _mean(similarity, dissent, rest, trace_of)
            and alike >= _mean(similarity, camps[0], camps[0], trace_of)
        ):
            return [sorted(rest), sorted(dissent)]
    if len(camps) < 2:
        return [sorted(members)]
    placed = {i for camp in camps for i in camp}
    for indices in (ids for ids in runs.values() if ids[0] not in placed):
        nearest = max(
            range(len(camps)),
            key=lambda c: max(float(similarity[i, j]) for i in indices for j in camps[c]),
        )
        camps[nearest].extend(indices)
    return [sorted(camp) for camp in camps]


def split_camps(
    groups: Sequence[Sequence[int]],
    trace_of: Sequence[str],
    states: Sequence[Mapping[str, Any]],
    clean: Sequence[bool],
    similarity: np.ndarray,
) -> list[list[int]]:
    """``groups`` (goal indices per task) with each task of several goals cut (module
    docstring). ``states`` are the goals' end states, ``clean`` whether each goal's run
    shows no failure sign."""
    found: list[list[int]] = []
    for members in groups:
        runs: dict[str, list[int]] = {}
        for index in members:
            runs.setdefault(trace_of[index], []).append(index)
        found.extend(_cut(runs, states, clean, similarity, trace_of))
    return sorted(found, key=lambda g: g[0])
