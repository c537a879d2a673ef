"""One task, one goal: values the user asked for, and two end states that each could be the
consensus, keep goals of one person apart."""

from __future__ import annotations

import numpy as np

from judge_service.forge.merge import merge_goals, split_camps


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
    states = ["A", "A", "B", "B", "C"]
    clean = [True, True, True, True, True]
    similarity = np.full((5, 5), 0.8)
    similarity[4, 0] = similarity[0, 4] = 0.95
    got = split_camps([[0, 1, 2, 3, 4]], trace_of, states, clean, similarity)
    assert got == [[0, 1, 4], [2, 3]]


def test_one_clean_consensus_and_stray_runs_stay_one_task():
    trace_of = ["a1", "a2", "b1", "b2"]
    similarity = np.ones((4, 4))
    # state B reached twice, once by a run with a failure sign: no second camp
    got = split_camps(
        [[0, 1, 2, 3]], trace_of, ["A", "A", "B", "B"], [True, True, True, False], similarity
    )
    assert got == [[0, 1, 2, 3]]
    # a run's parts count together: r1 and r2 reached A + B alike, one camp
    got = split_camps(
        [[0, 1, 2, 3]], ["r1", "r1", "r2", "r2"], ["A", "B", "B", "A"], [True] * 4, similarity
    )
    assert got == [[0, 1, 2, 3]]
