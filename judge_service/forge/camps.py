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

How many clean runs make a camp depends on the job. Where its runs come in repeats (GRPO
groups, several agents on one task set), a clean run that disagrees is most often a failed
repeat that shows no sign, and a camp takes :data:`CAMP_MIN_CLEAN`. Where they do not (one
run per request: production logs, a set held out from one agent), a run is its goal's only
evidence, and each run is a task of its own, with a failure sign or without, whatever end
state it reached: a run that failed is still its own goal's only run, not a failed repeat of
the goal it merged with by words, and two runs of one person that reached the same end state
are two requests (on one agent's real retail runs, the goals that still shared a task when
only end states were cut, 16 for gpt-4o and 13 for gpt-5, were each another goal of the same
person, 6 and 8 of them with a sibling's ground truth). A job holds
repeats when at least :data:`REPEATS_SHARE` of its tasks hold several runs (:func:`min_clean`):
where goals come one run each, only goals merged by their words share a task. Whether a
task's runs agree says less: a weak agent's repeats disagree, and two runs of one goal, one
of which failed, would read as a job without repeats. On the real retail runs the share is
0.92 with both agents' runs, and 0.30 and 0.36 with one agent's alone (one run per goal),
whose tasks then merged 53% and 58% of goals; with one clean run a camp, 23% and 15%; with
any one run, 14% and 11%; with every run a task, 0% and 0%, tasks per goal unchanged (1.05,
1.01: a run of two goals is two); telecom's (one run per goal) share is 0.11, merged 10% then
0% (docs/forge.md).

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
#: The share of a job's tasks that must hold several runs for the job to hold repeats (most
#: of them).
REPEATS_SHARE = 0.5

Runs = dict[str, list[int]]  # one task's members by trace: a run's goals in the task


def _mean(
    similarity: np.ndarray, a: Sequence[int], b: Sequence[int], apart: Sequence[str]
) -> float:
    pairs = [float(similarity[i, j]) for i in a for j in b if apart[i] != apart[j]]
    return sum(pairs) / len(pairs) if pairs else 0.0


def _by_state(runs: Runs, states: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The task's traces by the end state each reached (its goals' states together)."""
    by_state: dict[str, list[str]] = {}
    for trace, indices in runs.items():
        state: dict[str, Any] = {}
        for i in indices:
            state.update(states[i])
        by_state.setdefault(canonical(state), []).append(trace)
    return by_state


def min_clean(tasks: Sequence[Runs]) -> int:
    """The clean runs a camp takes in this job of ``tasks`` (each its members by trace):
    :data:`CAMP_MIN_CLEAN` where it holds repeats, else 1 (module docstring)."""
    several = sum(1 for runs in tasks if len(runs) >= 2)
    return CAMP_MIN_CLEAN if several >= REPEATS_SHARE * len(tasks) else 1


def _cut(
    runs: Runs,
    by_state: Mapping[str, Sequence[str]],
    clean: Sequence[bool],
    similarity: np.ndarray,
    trace_of: Sequence[str],
) -> list[list[int]]:
    """One task's members, in a job of repeats, cut into the goals its runs show (module
    docstring): ``by_state`` its traces by end state."""
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
    tasks: list[Runs] = []
    for members in groups:
        runs: Runs = {}
        for index in members:
            runs.setdefault(trace_of[index], []).append(index)
        tasks.append(runs)
    found: list[list[int]] = []
    if min_clean(tasks) == 1:  # without repeats every run is its own goal's only run
        found = [sorted(indices) for runs in tasks for indices in runs.values()]
    else:
        for runs in tasks:
            found.extend(_cut(runs, _by_state(runs, states), clean, similarity, trace_of))
    return sorted(found, key=lambda g: g[0])
