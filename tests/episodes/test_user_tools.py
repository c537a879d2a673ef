"""A user with tools of their own, in an episode: they do what the agent asks, nothing more.

The corpus of :mod:`tests.world.test_world_user_side`: the agent reads the account; the user,
told what to do, checks and switches the radio of their own phone. The task's reference is
the user's write (``write:toggle_radio``). Then the real telecom runs of τ²-bench: each run's
own agent messages, played as an episode against its replayed user, reach the reference of
the task that run alone formed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge_service.episodes.episode import Episode, act, finish, script_for, start
from judge_service.episodes.user_tools import named_tools, offered, reply_after
from judge_service.forge.embed import TfidfEmbedder
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.conversation import Trace, parse_traces
from judge_service.world.build import build_world
from judge_service.world.world import World
from tests.episodes.test_world_episode import _task
from tests.world.test_world_user_side import OFF, ON, REAL, run


@pytest.fixture(scope="module")
def radio() -> tuple[World, dict[str, Any], dict[str, Trace]]:
    runs = [run(f"r{i}", fixed=True) for i in range(3)]
    traces = parse_traces("\n".join(json.dumps(r) for r in runs))
    forged = forge_traces(traces, embedder=TfidfEmbedder())
    assert len(forged.tasks) == 1
    task = _task(0, forged.tasks[0])
    assert task["end_state"] == {"write:toggle_radio": ["{}"]}
    return build_world(traces), task, {t.id: t for t in traces}


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _play(world: World, script: Any, actions: list[dict[str, Any]]) -> Episode:
    episode, _ = start(world, script)
    for action in actions:
        if not episode.done:
            episode, _ = act(world, script, episode, action)
    return episode


def _by_user(episode: Episode) -> list[tuple[str, str]]:
    return [(a["tool"], a["answer"]) for a in episode.answers if a.get("by") == "user"]


def test_the_user_does_what_the_agent_asks_and_says_what_it_showed(radio) -> None:
    world, task, traces = radio
    script = script_for(task, traces, seed=0)
    episode = _play(
        world,
        script,
        [
            _say("Could you run check_status on your phone and tell me what it shows?"),
            _say("Switch it on with toggle_radio, then run check_status again."),
        ],
    )
    assert _by_user(episode) == [
        ("check_status", OFF),
        ("toggle_radio", "Radio is now ON."),
        ("check_status", ON),
    ]
    replies = [m["content"] for m in episode.messages if m["role"] == "user"]
    assert replies[1] == "It says the radio is off."
    assert replies[2] == "It works now, thanks!"
    assert episode.done and episode.ended_by == "user"
    filed = {a["message"] for a in episode.answers if a.get("by") == "user"}
    assert all(episode.messages[i]["role"] == "user" for i in filed)
    assert finish(world, script, episode).reward == 1.0


def test_the_user_never_acts_unprompted(radio) -> None:
    world, task, traces = radio
    script = script_for(task, traces, seed=0)
    episode = _play(world, script, [_say("What does the screen show right now?")])
    assert _by_user(episode) == []
    replies = [m["content"] for m in episode.messages if m["role"] == "user"]
    assert "It says the radio is off." not in replies  # never reports what it has not seen
    verdict = finish(world, script, episode)
    assert verdict.reward == 0.0
    assert verdict.diff[0]["entity"] == "write:toggle_radio"


def test_the_agent_cannot_call_the_users_tools(radio) -> None:
    world, task, traces = radio
    script = script_for(task, traces, seed=0)
    call = {"id": "c1", "type": "function", "function": {"name": "toggle_radio", "arguments": "{}"}}
    episode = _play(world, script, [{"role": "assistant", "content": None, "tool_calls": [call]}])
    answer = episode.messages[-1]
    assert answer["role"] == "tool" and answer["content"].startswith("Error")
    assert finish(world, script, episode).reward == 0.0


def test_the_agent_is_not_offered_the_users_tools(radio) -> None:
    world, _, _ = radio
    schemas = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in ("get_account", "toggle_radio", "check_status")
    ]
    assert [t["function"]["name"] for t in offered(world, schemas)] == ["get_account"]


def test_tools_are_named_as_written_or_by_their_words(radio) -> None:
    world, _, _ = radio
    assert named_tools(world, "Please use `toggle_radio` and then check_status.") == [
        "toggle_radio",
        "check_status",
    ]
    assert named_tools(world, "Can you check the status of your phone?") == ["check_status"]
    assert named_tools(world, "Toggle the radio, please.") == ["toggle_radio"]
    assert named_tools(world, "Toggle the radio.", done=["toggle_radio"]) == []
    assert named_tools(world, "I see your account is on the basic plan.") == []


def test_the_reply_is_the_turn_after_the_same_answer_else_the_answer() -> None:
    acts = [{"tool": "check_status", "answer": OFF, "said": "It is off."}]
    assert reply_after(acts, [("check_status", OFF)]) == "It is off."
    assert reply_after(acts, [("check_status", ON)]) == ON


def test_real_telecom_runs_played_as_episodes_reach_their_own_reference() -> None:
    """Each run that alone formed its task, its own agent messages played against its own
    replayed user: the user's calls are made as the agent asks, and the successful runs
    reach the reference (their writes are the user's)."""
    rows = [json.loads(line) for line in (REAL / "telecom_gpt4o.jsonl").read_text().splitlines()]
    bare = "\n".join(json.dumps({"id": r["id"], "messages": r["messages"]}) for r in rows)
    traces = parse_traces(bare)
    by_id = {t.id: t for t in traces}
    world = build_world(traces)
    forged = forge_traces(traces)
    passed = {r["id"] for r in rows if r["metadata"]["reward"] >= 1}
    reached = []
    for number, task in enumerate(forged.tasks):
        if len(task.trace_ids) != 1 or task.trace_ids[0] not in passed:
            continue
        trace = by_id[task.trace_ids[0]]
        script = script_for(_task(number, task), by_id, seed=0)
        opening = next(i for i, m in enumerate(trace.messages) if m["role"] == "user")
        policy = [
            {k: m[k] for k in ("content", "tool_calls") if m.get(k) is not None}
            for m in trace.messages[opening + 1 :]
            if m["role"] == "assistant"
        ]
        episode = _play(world, script, policy)
        assert _by_user(episode), trace.id
        reached.append(finish(world, script, episode).reward == 1.0)
    assert len(reached) >= 8
    assert sum(reached) >= 0.8 * len(reached), reached
