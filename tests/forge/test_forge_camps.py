"""One task, one goal: values the user asked for, and two end states that each could be the
consensus, keep goals of one person apart."""

from __future__ import annotations

import numpy as np

from judge_service.forge.camps import split_camps
from judge_service.forge.merge import merge_goals

A, B, C, D = ({"r=1": v} for v in "ABCD")
B2 = {"r=2": "B"}  # a second record: a run's parts together are A + B2


def test_two_values_of_one_field_are_two_goals_and_one_named_only_once_is_not():
    similarity = np.ones((3, 3))
    handles = [
        ["who:u1", "said:type=canister", "said:color=red"],
        ["who:u1", "said:type=robotic"],
        ["who:u1", "said:color=red"],  # names no type: can be either
    ]
    assert merge_goals(similarity, handles, 0.5) == [[0, 2], [1]]


def test_a_task_with_two_clean_consensuses_is_cut_and_other_runs_join_the_nearer():
    # runs a1, a2 reached state A cleanly; b1, b2 state B; f1 is a failed run of A's goal
    trace_of = ["a1", "a2", "b1", "b2", "f1"]
    states = [{"r=1": "A"}, {"r=1": "A"}, {"r=1": "B"}, {"r=1": "B"}, {"r=1": "C"}]
    clean = [True, True, True, True, True]
    similarity = np.full((5, 5), 0.8)
    similarity[4, 0] = similarity[0, 4] = 0.95
    got = split_camps([[0, 1, 2, 3, 4]], trace_of, states, clean, similarity)
    assert got == [[0, 1, 4], [2, 3]]


def test_one_clean_consensus_and_stray_runs_stay_one_task():
    trace_of = ["a1", "a2", "b1", "b2"]
    similarity = np.ones((4, 4))
    # state B reached twice, once by a run with a failure sign: no second camp
    got = split_camps([[0, 1, 2, 3]], trace_of, [A, A, B, B], [True, True, True, False], similarity)
    assert got == [[0, 1, 2, 3]]
    # a run's parts count together: r1 and r2 reached A and B2 in two goals, r3 and r4 in
    # one; all four reached the same end state, one camp
    both = {**A, **B2}
    trace_of = ["r1", "r1", "r2", "r2", "r3", "r4"]
    members = [[0, 1, 2, 3, 4, 5]]
    got = split_camps(members, trace_of, [A, B2, B2, A, both, both], [True] * 6, np.ones((6, 6)))
    assert got == members


def test_clean_dissenters_alike_each_other_are_another_goal_and_unalike_ones_are_not():
    # a1, a2 agree; c1 and d1 reached other end states, each without a sign
    trace_of, states, clean = ["a1", "a2", "c1", "d1"], [A, A, C, D], [True] * 4
    alike = np.full((4, 4), 0.7)
    alike[2, 3] = alike[3, 2] = 0.9
    assert split_camps([[0, 1, 2, 3]], trace_of, states, clean, alike) == [[0, 1], [2, 3]]
    # their words are no more like each other's than the rest's: failed repeats, one task
    unalike = np.full((4, 4), 0.7)
    assert split_camps([[0, 1, 2, 3]], trace_of, states, clean, unalike) == [[0, 1, 2, 3]]
    # nor when they are less like each other's than the camp's runs are
    closer_camp = alike.copy()
    closer_camp[0, 1] = closer_camp[1, 0] = 0.95
    assert split_camps([[0, 1, 2, 3]], trace_of, states, clean, closer_camp) == [[0, 1, 2, 3]]
    # a dissenter with a failure sign does not count
    signed = [True, True, True, False]
    assert split_camps([[0, 1, 2, 3]], trace_of, states, signed, alike) == [[0, 1, 2, 3]]


def test_one_run_is_a_camp_only_in_a_job_without_repeats():
    """Two tasks of one person each merged two runs that reached other end states, each
    without a sign, beside tasks of one run each. Where most tasks hold one run (one run per
    request), each run is its goal's only evidence and the task is cut; where most hold
    several (repeats), such a run is a failed repeat that shows no sign and the task stays
    whole."""
    trace_of = ["a", "b", "c", "d", "e", "f", "g"]
    similarity = np.ones((7, 7))
    groups = [[0, 1], [2, 3], [4], [5], [6]]
    states = [A, B, C, D, A, B, C]
    got = split_camps(groups, trace_of, states, [True] * 7, similarity)
    assert got == [[0], [1], [2], [3], [4], [5], [6]]
    # without one of the single runs, two of four hold several, half: repeats
    got = split_camps(groups[:4], trace_of[:6], states[:6], [True] * 6, similarity)
    assert got == [[0, 1], [2, 3], [4], [5]]
    # two of three hold several, most: the disagreeing tasks stay whole, though no task's
    # runs agree (a weak agent's repeats)
    fewer = [[0, 1], [2, 3], [4]]
    got = split_camps(fewer, trace_of[:5], states[:5], [True] * 5, np.ones((5, 5)))
    assert got == [[0, 1], [2, 3], [4]]


def test_without_repeats_a_run_with_a_failure_sign_is_a_goal_of_its_own():
    """One run per request: a run that failed is still the only run of its own goal, not a
    failed repeat of the goal it merged with by words, so its end state is a camp too. With
    repeats it is no camp."""
    trace_of = ["a", "b", "c", "d", "e"]
    similarity = np.ones((5, 5))
    clean = [True, False, True, True, True]
    groups = [[0, 1], [2], [3], [4]]
    got = split_camps(groups, trace_of, [A, B, C, D, A], clean, similarity)
    assert got == [[0], [1], [2], [3], [4]]
    # with repeats, a signed run is no camp: beside a camp of two, it stays
    repeats = [[0, 1, 2], [3, 4]]
    got = split_camps(repeats, ["a", "b", "c", "d", "e"], [A, B, A, D, D], clean, similarity)
    assert got == [[0, 1, 2], [3, 4]]
    # two runs of one goal, the one that failed showing a sign: a job of repeats
    got = split_camps([[0, 1]], trace_of[:2], [A, B], clean[:2], similarity[:2, :2])
    assert got == [[0, 1]]


def test_without_repeats_two_runs_that_reached_one_end_state_are_two_tasks():
    """One run per request: two runs of one person that reached the same end state are two
    requests (two goals that want the same change), not one goal run twice. With repeats
    they are a camp of one goal."""
    trace_of = ["a", "b", "c", "d", "e"]
    similarity = np.ones((5, 5))
    groups = [[0, 1], [2], [3], [4]]
    got = split_camps(groups, trace_of, [A, A, B, C, D], [True] * 5, similarity)
    assert got == [[0], [1], [2], [3], [4]]
    repeats = [[0, 1], [2, 3], [4]]
    got = split_camps(repeats, trace_of, [A, A, B, B, D], [True] * 5, similarity)
    assert got == [[0, 1], [2, 3], [4]]
