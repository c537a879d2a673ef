"""Episodes over a world, pure: a policy acts, the world answers, the replay user talks.

On a lending library's backend (the domain of ``test_world_library``, with conversations
that have several user turns and real tool schemas) and on runs of the retail corpus: a
policy that replays a successful run reaches the task's reference; a wrong write, or none,
does not, with the diff; the replay user gives the traced turns in order and ends with the
turn that ended the conversation; ``max_turns`` and ``end`` stop an episode; a malformed
action, an unknown tool and arguments that fail the schema are tool errors in the
observation; an episode stored as JSON after any step goes on exactly as the original.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bench.world_own_runs import task_fields
from judge_service.episodes.episode import (
    REJECTED,
    Episode,
    Script,
    act,
    finish,
    script_for,
    start,
    state_of,
)
from judge_service.episodes.user_turns import run_turns
from judge_service.forge.embed import TfidfEmbedder
from judge_service.forge.trace_tasks import TraceTask, forge_traces
from judge_service.traces.conversation import Trace, parse_traces
from judge_service.traces.goals import goals
from judge_service.world.actions import parse_action
from judge_service.world.build import build_world
from judge_service.world.world import World
from tests.world.test_world_library import Library, corpus_jsonl

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail" / "traces.jsonl"


def _tool(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


STRING, NUMBER, INTEGER = {"type": "string"}, {"type": "number"}, {"type": "integer"}
TOOLS = [
    _tool("find_member", email=STRING),
    _tool("get_member", member_id=STRING),
    _tool("get_book", isbn=STRING),
    _tool("borrow_book", member_id=STRING, isbn=STRING),
    _tool("pay_fine", member_id=STRING, amount=NUMBER),
    _tool("place_hold", isbn=STRING, member_id=STRING),
    _tool("rate_book", isbn=STRING, stars=INTEGER),
]


def _run(trace_id: str, steps: list[tuple[Any, ...]]) -> dict[str, Any]:
    """A conversation as production logs it: ``("user", text)``, ``("bot", text)``, or a
    tool call ``(name, args)`` that a fresh backend answers."""
    library = Library()
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You run the library desk."}]
    for number, step in enumerate(steps):
        if step[0] in ("user", "bot"):
            role = "user" if step[0] == "user" else "assistant"
            messages.append({"role": role, "content": step[1]})
            continue
        name, args = step
        call_id = f"{trace_id}-{number}"
        function = {"name": name, "arguments": json.dumps(args)}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": library.call(name, args)}
        )
    return {"id": trace_id, "messages": messages, "tools": TOOLS, "metadata": {}}


def _borrow(trace_id: str, opening: str, yes: str, bye: str, isbn: str = "978-1"):
    return _run(
        trace_id,
        [
            ("user", opening),
            ("bot", "Happy to help. What is the e-mail address on your library card?"),
            ("user", "It's ada@example.org."),
            ("find_member", {"email": "ada@example.org"}),
            ("get_member", {"member_id": "M-100"}),
            ("get_book", {"isbn": isbn}),
            ("bot", "Dune has copies available. Shall I put it on your card, Ada?"),
            ("user", yes),
            ("borrow_book", {"member_id": "M-100", "isbn": isbn}),
            ("get_book", {"isbn": isbn}),
            ("get_member", {"member_id": "M-100"}),
            ("bot", "Done: Dune is on your card. Anything else?"),
            ("user", bye),
        ],
    )


def _fine(trace_id: str, opening: str, bye: str) -> dict[str, Any]:
    return _run(
        trace_id,
        [
            ("user", opening),
            ("get_member", {"member_id": "M-300"}),
            ("bot", "You owe 2.75. How much would you like to pay?"),
            ("user", "Let's pay 1.25 of it today."),
            ("pay_fine", {"member_id": "M-300", "amount": 1.25}),
            ("bot", "Paid: 1.50 is left. Anything else?"),
            ("user", bye),
        ],
    )


RUNS = [
    _borrow(
        "borrow-1",
        "Hi, I would like to borrow Dune, please.",
        "Yes please, go ahead.",
        "No, that's all. Thanks!###STOP###",
    ),
    _borrow(
        "borrow-2",
        "Hello! Could I borrow the book Dune?",
        "Yes, do it.",
        "That's everything, thank you. Bye!",
    ),
    _fine("fine-1", "I'm member M-300 and want to pay part of my fine.", "No thanks, bye."),
    _fine("fine-2", "Member M-300 here, I'd like to pay some of my fine.", "That's all, bye!"),
]


def _task(number: int, task: TraceTask) -> dict[str, Any]:
    """A forge task as the service hands it to :func:`script_for`."""
    return task_fields(task, f"task-{number}")


def _tasks(traces: list[Trace]) -> list[dict[str, Any]]:
    forged = forge_traces(traces, embedder=TfidfEmbedder())
    return [_task(i, t) for i, t in enumerate(forged.tasks)]


@pytest.fixture(scope="module")
def library() -> tuple[World, dict[str, Trace], dict[str, dict[str, Any]]]:
    traces = parse_traces(corpus_jsonl() + "\n" + "\n".join(json.dumps(r) for r in RUNS))
    ours = [t for t in traces if t.id in {r["id"] for r in RUNS}]
    tasks = {t["source"]["traces"][0].split("-")[0]: t for t in _tasks(ours)}
    assert set(tasks) == {"borrow", "fine"}
    return build_world(traces), {t.id: t for t in traces}, tasks


def _call(name: str, number: int = 0, **args: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    return {"id": f"a{number}", "type": "function", "function": function}


def _calls(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _policy(trace: Trace, first_turn: int = 1) -> list[dict[str, Any]]:
    """The run's assistant messages after its opening turn: a policy that acts as it did."""
    return [
        {k: m[k] for k in ("content", "tool_calls") if m.get(k) is not None}
        for m in trace.messages[first_turn + 1 :]
        if m["role"] == "assistant"
    ]


def _play(world, script, actions, **options) -> tuple[Episode, list[list[dict[str, Any]]]]:
    episode, first = start(world, script, **options)
    seen = [first]
    for action in actions:
        if episode.done:
            break
        episode, observation = act(world, script, episode, action)
        seen.append(observation)
    return episode, seen


def _roundtrip(episode: Episode) -> Episode:
    return Episode.model_validate_json(episode.model_dump_json())


# --- the library ---------------------------------------------------------------------------


def test_a_policy_that_acts_as_the_successful_run_reaches_the_reference(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    assert script.user_trace == "borrow-1" and script.tools == TOOLS
    assert script.system == "You run the library desk."
    episode, seen = _play(world, script, _policy(traces["borrow-1"]))
    assert seen[0] == [
        {"role": "system", "content": "You run the library desk."},
        {"role": "user", "content": "Hi, I would like to borrow Dune, please."},
    ]
    assert episode.done and episode.ended_by == "user"
    assert seen[-1] == [{"role": "user", "content": "No, that's all. Thanks!"}]  # no ###STOP###
    verdict = finish(world, script, episode)
    assert verdict.reward == 1.0 and verdict.reached and verdict.diff == []
    assert set(episode.touched) == {"isbn=978-1", "member_id=M-100"}
    paths = [a["path"] for a in episode.answers]
    assert paths[:4] == ["read", "read", "read", "transition"]
    tool_messages = [m for m in episode.messages if m["role"] == "tool"]
    assert [a["message"] for a in episode.answers] == [
        episode.messages.index(m) for m in tool_messages
    ]
    assert tool_messages[3] == {
        "role": "tool",
        "tool_call_id": "borrow-1-8",
        "name": "borrow_book",
        "content": "OK",
    }
    assert json.loads(tool_messages[4]["content"])["copies_available"] == 2  # the write carried


def test_the_state_is_stored_as_what_differs_from_the_base(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = _play(world, script, _policy(traces["borrow-1"]))
    assert set(episode.overrides) <= set(episode.touched) | set(start(world, script)[0].overrides)
    assert len(episode.overrides) < len(world.base) and episode.removed == []
    assert state_of(world, episode) == {**world.task_state(script.start_traces), **{
        k: episode.overrides[k] for k in episode.touched
    }}  # fmt: skip


def test_a_wrong_write_gets_no_reward_and_the_diff_says_where(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    actions = [
        _say("Your e-mail, please?"),
        _calls(_call("find_member", email="ada@example.org")),
        _say("Shall I put Walden on your card?"),
        _calls(_call("borrow_book", member_id="M-100", isbn="978-4")),
        _say("Done. Anything else?"),
    ]
    episode, _ = _play(world, script, actions)
    assert episode.ended_by == "user"
    verdict = finish(world, script, episode)
    assert verdict.reward == 0.0 and verdict.reached is False
    assert verdict.diff == [
        {
            "entity": "member_id=M-100",
            "field": "loans",
            "want": ["978-1"],
            "got": ["978-4"],
            "why": "differs",
        }
    ]
    assert "isbn=978-4" in episode.touched


def test_claiming_the_change_without_making_it_gets_no_reward(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    actions = [_say("Which card?"), _say("Shall I?"), _say("Done: Dune is on your card.")]
    episode, _ = _play(world, script, actions)
    verdict = finish(world, script, episode)
    assert episode.ended_by == "user" and episode.touched == [] and episode.answers == []
    assert verdict.reward == 0.0 and verdict.diff


def test_the_replay_user_answers_each_question_and_ends_with_the_last(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=1)
    assert script.user_trace == "borrow-2" and script.user_ends
    assert script.user_turns == [
        "Hello! Could I borrow the book Dune?",
        "It's ada@example.org.",
        "Yes, do it.",
        "That's everything, thank you. Bye!",
    ]
    assert script.exchanges[1]["asked"].startswith("Happy to help. What is the e-mail")
    episode, _ = start(world, script, seed=1)
    said = []
    for text in ("Which e-mail is your card under?", "Shall I lend you Dune?", "Done. More?"):
        assert not episode.done
        episode, observation = act(world, script, episode, _say(text))
        said += [m["content"] for m in observation]
    assert said == script.user_turns[1:]
    assert episode.done and episode.ended_by == "user" and episode.user_next == 4
    again, observation = act(world, script, episode, _say("Hello?"))
    assert again is episode and observation == []  # a done episode takes no more actions


def test_tool_calls_go_to_the_world_and_text_to_the_user(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = start(world, script)
    mixed = {**_calls(_call("get_book", isbn="978-1")), "content": "Let me look."}
    episode, observation = act(world, script, episode, mixed)
    assert [m["role"] for m in observation] == ["tool"] and episode.user_next == 1
    assert episode.messages[-2] == {"role": "assistant", **mixed}
    episode, observation = act(world, script, episode, _say("What is your e-mail?"))
    assert observation == [{"role": "user", "content": "It's ada@example.org."}]


def test_seeds_pick_runs_deterministically_among_those_that_reached_it(library) -> None:
    _, traces, tasks = library
    task = tasks["fine"]
    picked = [script_for(task, traces, seed).user_trace for seed in range(4)]
    assert picked == ["fine-1", "fine-2", "fine-1", "fine-2"]
    assert script_for(task, traces, 3) == script_for(task, traces, 3)
    assert script_for(task, traces, 0).start_traces == ["fine-1", "fine-2"]
    failed = {**task, "end_states": [{"end_state": {"x": 1}, "count": 1, "traces": ["fine-1"]},
                                     {"end_state": task["end_state"], "count": 1,
                                      "traces": ["fine-2"]}]}  # fmt: skip
    assert {script_for(failed, traces, s).user_trace for s in range(4)} == {"fine-2"}
    without = script_for(task, {}, 0)  # no run at hand: the task's prompt opens it
    assert without.user_turns == ["I'm member M-300 and want to pay part of my fine."]
    assert without.system == "You run the library desk."


def test_the_user_plays_another_policy_to_the_reference(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["fine"], traces, seed=1)
    actions = [
        _say("How much would you like to pay?"),
        _calls(_call("pay_fine", member_id="M-300", amount=1.25)),
        _say("Paid. Anything else?"),
    ]
    episode, seen = _play(world, script, actions)
    assert [m["content"] for m in seen[1]] == ["Let's pay 1.25 of it today."]
    assert episode.ended_by == "user" and seen[-1][0]["content"] == "That's all, bye!"
    assert finish(world, script, episode).reward == 1.0


def test_max_turns_ends_the_episode_and_end_lets_the_agent_end_it(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    look = _calls(_call("get_book", isbn="978-1"))
    episode, _ = _play(world, script, [look] * 10, max_turns=3)
    assert episode.done and episode.ended_by == "max_turns" and episode.turns == 3
    episode, _ = start(world, script)
    episode, observation = act(world, script, episode, _say("Goodbye."), end=True)
    assert episode.done and episode.ended_by == "agent" and observation == []
    assert episode.messages[-1] == {"role": "assistant", "content": "Goodbye."}
    episode, _ = start(world, script)
    ended, observation = act(world, script, episode, None, end=True)
    assert ended.ended_by == "agent" and ended.messages == episode.messages


MALFORMED: list[tuple[Any, str]] = [
    ("just text", "must be an assistant message"),
    (7, "must be an assistant message"),
    (None, "must be an assistant message"),
    ([{"role": "assistant"}], "must be an assistant message"),
    ({"role": "user", "content": "hi"}, "role 'assistant'"),
    ({"content": {"text": "hi"}}, "`content` must be"),
    ({}, "neither text nor tool calls"),
    ({"content": "x", "tool_calls": "get_book"}, "`tool_calls` must be a list"),
    (_calls("get_book"), "a tool call must be an object"),
    (_calls({"id": "a0", "function": "get_book"}), "`function` must be an object"),
    (_calls({"id": "a0", "function": {"arguments": "{}"}}), "must name its function"),
    (_calls({"id": "a0", "function": {"name": "get_book", "arguments": "{isbn"}}), "not valid"),
    (_calls({"id": "a0", "function": {"name": "get_book", "arguments": "[1]"}}), "JSON object"),
    (_calls(_call("launch_rocket", when="now")), "unknown tool 'launch_rocket'"),
    (_calls(_call("get_book")), '"isbn" is a required property'),
    (_calls(_call("get_book", isbn=["978-1"])), "at 'isbn': [\"978-1\"] is not of type"),
    (_calls(_call("pay_fine", member_id="M-100", amount="all")), "at 'amount'"),
]


@pytest.mark.parametrize(("action", "says"), MALFORMED)
def test_a_bad_action_is_a_tool_error_in_the_observation(library, action, says) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = start(world, script)
    after, observation = act(world, script, episode, action)
    assert len(observation) == 1 and observation[0]["role"] == "tool"
    assert observation[0]["content"].startswith("Error: ") and says in observation[0]["content"]
    assert after.answers[-1]["path"] == REJECTED and after.answers[-1]["error"] is True
    assert after.overrides == episode.overrides and after.touched == []
    assert after.turns == 1 and not after.done and after.user_next == 1
    assert _roundtrip(after) == after


def test_an_unknown_tool_is_answered_with_the_tools_there_are() -> None:
    """Where the task offers schemas they are the tools; where its traces came without any,
    the tools the world can answer are, never "none"."""
    action = _calls(_call("launch_rocket", when="now"))
    known = {"get_book", "pay_fine"}
    (bare,) = parse_action(action, known, {}).requests
    assert bare.error == "Error: unknown tool 'launch_rocket'. Tools: get_book, pay_fine"
    (offered,) = parse_action(action, known, {"get_book": {}}).requests
    assert offered.error == "Error: unknown tool 'launch_rocket'. Tools: get_book"


def test_an_arguments_object_and_a_missing_call_id_are_taken(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = start(world, script)
    call = {"type": "function", "function": {"name": "get_book", "arguments": {"isbn": "978-1"}}}
    episode, observation = act(world, script, episode, _calls(call))
    assert observation[0]["tool_call_id"] == "call_1_0" and episode.answers[0]["path"] == "read"
    assert episode.messages[-2]["tool_calls"][0]["id"] == "call_1_0"


def test_fuzzed_actions_never_raise_and_the_episode_stays_json(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    rng = random.Random(11)
    names = ["get_book", "borrow_book", "pay_fine", "rate_book", "nope", "", None, 3]
    values = [None, True, 0, 2.5, "", "M-100", "978-1", "978-9", [], ["978-2"], {"a": 1}]
    episode, _ = start(world, script, max_turns=25)
    ended = 0
    for number in range(200):
        keys = rng.sample(["member_id", "isbn", "email", "amount", "stars", "x"], rng.randint(0, 3))
        args: Any = {k: rng.choice(values) for k in keys}
        if rng.random() < 0.2:
            args = json.dumps(args)[: rng.randint(0, 12)]
        function = {"name": rng.choice(names), "arguments": args}
        action = rng.choice(
            [_calls({"id": str(number), "function": function}), _say("ok?"), {"tool_calls": 5}]
        )
        episode, observation = act(world, script, episode, action)
        assert observation or episode.ended_by == "user"
        assert all(isinstance(m.get("content"), str) for m in observation)
        assert _roundtrip(episode) == episode
        json.dumps(state_of(world, episode))
        ended += episode.done
        if episode.done:
            episode, _ = start(world, script, max_turns=25)
    assert ended  # ended by the user, or by max_turns: a user asked "ok?" answers, never leaves


def test_a_write_only_a_model_could_answer_leaves_the_reward_undetermined(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    rate = _calls(_call("rate_book", isbn="978-3", stars=2))  # no rule fits a mean
    episode, _ = _play(world, script, [*_policy(traces["borrow-1"])[:-1], rate])
    answer = episode.answers[-1]
    assert answer["path"] == "model_needed" and answer["tool"] == "rate_book"
    message = episode.messages[answer["message"]]
    assert message["content"] == "Error: rate_book could not complete this request"
    shown = message["content"].lower()
    assert not [w for w in ("model", "simulat", "trace", "learn") if w in shown]
    verdict = finish(world, script, episode)
    assert verdict.reward is None and verdict.undetermined == ["rate_book"]


def test_an_episode_stored_after_every_step_goes_on_as_the_original(library) -> None:
    world, traces, tasks = library
    script = Script.model_validate_json(
        script_for(tasks["borrow"], traces, seed=0).model_dump_json()
    )
    episode, _ = start(world, script)
    stored = _roundtrip(episode)
    for action in _policy(traces["borrow-1"]):
        episode, observation = act(world, script, episode, action)
        stored, again = act(world, script, stored, action)
        assert again == observation and stored == episode
        stored = _roundtrip(stored)
        assert stored == episode
    assert stored.done and finish(world, script, stored) == finish(world, script, episode)


def test_act_leaves_the_episode_it_was_given_as_it_was(library) -> None:
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = start(world, script)
    for action in _policy(traces["borrow-1"])[:7]:
        before = episode.model_dump_json()
        after, _ = act(world, script, episode, action)
        assert episode.model_dump_json() == before
        episode = after


TWO_GOALS = _run(
    "two-goals",
    [
        ("user", "I'm member M-300 and want to pay my fine of 2.75."),
        ("pay_fine", {"member_id": "M-300", "amount": 2.75}),
        ("bot", "Paid in full. Anything else?"),
        ("user", "Also, please place a hold on Emma for me."),
        ("place_hold", {"isbn": "978-2", "member_id": "M-300"}),
        ("bot", "Emma is on hold for you. Anything else?"),
        ("user", "No, that's all. Goodbye!"),
    ],
)


def test_a_goal_the_run_followed_with_another_borrows_the_closing_turn() -> None:
    trace = parse_traces(json.dumps(TWO_GOALS))[0]
    first, second = goals(trace)
    turns, exchanges, ends = run_turns(trace, [[first.start, first.end - 1]])
    assert turns == [
        "I'm member M-300 and want to pay my fine of 2.75.",
        "No, that's all. Goodbye!",
    ]
    assert ends and exchanges[1]["asked"] == "Emma is on hold for you. Anything else?"
    turns, _, ends = run_turns(trace, [[second.start, second.end - 1]])
    assert turns == ["Also, please place a hold on Emma for me.", "No, that's all. Goodbye!"]
    assert ends


def test_without_evidence_the_goal_is_found_by_its_turn_or_its_words() -> None:
    trace = parse_traces(json.dumps(TWO_GOALS))[0]
    _, second = goals(trace)
    by_turn = {"id": "t", "source": {"trace_id": "two-goals", "turn": second.start,
                                     "traces": ["two-goals"]}}  # fmt: skip
    script = script_for(by_turn, {"two-goals": trace}, 0)
    assert script.user_turns[0] == "Also, please place a hold on Emma for me."
    runs = {"trace_id": "elsewhere", "traces": ["elsewhere", "two-goals"]}
    by_words = {"id": "t", "goal": "Place a hold on the book Emma", "source": runs}
    script = script_for(by_words, {"two-goals": trace}, 0)
    assert script.user_trace == "two-goals"
    assert script.user_turns[0] == "Also, please place a hold on Emma for me."
    by_words["goal"] = "Pay the fine in full"
    assert script_for(by_words, {"two-goals": trace}, 0).user_turns[0].startswith("I'm member")


# --- retail runs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def retail() -> tuple[World, dict[str, Trace], list[dict[str, Any]]]:
    """The world of the whole corpus, and the forge tasks of its first goals' runs."""
    traces = parse_traces(RETAIL.read_text(encoding="utf-8"))
    goals_of = list(dict.fromkeys(t.id.rsplit("-", 1)[0] for t in traces))[:8]
    chosen = [t for t in traces if t.id.rsplit("-", 1)[0] in goals_of]
    tasks = [t for t in _tasks(chosen) if t["end_state"]]
    assert len(tasks) >= 6
    return build_world(traces), {t.id: t for t in traces}, tasks


def _retail_policy(task: dict[str, Any], trace: Trace) -> list[dict[str, Any]]:
    """The assistant messages of the run's part of the task, after its opening turn."""
    spans = next(e["turns"] for e in task["source"]["evidence"] if e["trace_id"] == trace.id)
    indexes = [i for s in spans for i in range(s[0] + 1, s[1] + 1)]
    return [
        {k: trace.messages[i][k] for k in ("content", "tool_calls") if trace.messages[i].get(k)}
        for i in indexes
        if trace.messages[i]["role"] == "assistant"
    ]


def test_retail_runs_replayed_reach_their_references(retail) -> None:
    world, traces, tasks = retail
    played = 0
    for task in tasks:
        for seed in range(2):
            script = script_for(task, traces, seed)
            episode, _ = _play(world, script, _retail_policy(task, traces[script.user_trace]))
            verdict = finish(world, script, episode)
            assert episode.ended_by == "user", (task["id"], seed)
            assert verdict.reward == 1.0, (task["id"], seed, verdict.diff)
            assert episode.touched and all(a["path"] != "model_needed" for a in episode.answers)
            played += 1
    assert played >= 12


def test_retail_runs_without_their_writes_get_no_reward(retail) -> None:
    world, traces, tasks = retail
    for task in tasks[:4]:
        script = script_for(task, traces, 0)
        policy = _retail_policy(task, traces[script.user_trace])
        writes = {n for n, t in world.tools.items() if t.effect == "write"}
        kept = [
            a
            for a in policy
            if not any(c["function"]["name"] in writes for c in a.get("tool_calls") or [])
        ]
        episode, _ = _play(world, script, kept)
        verdict = finish(world, script, episode)
        assert verdict.reward == 0.0 and verdict.diff, task["id"]
        assert episode.touched == []


def test_retail_schema_failures_get_the_backends_own_words_when_the_world_knows_them(
    retail,
) -> None:
    world, traces, tasks = retail
    script = script_for(tasks[0], traces, 0)
    enums = [
        (tool["function"]["name"], name, spec["enum"])
        for tool in script.tools
        for name, spec in tool["function"]["parameters"].get("properties", {}).items()
        if "enum" in spec
    ]
    learned = {
        (name, rule.arg): rule
        for name, model in world.tools.items()
        for rule in model.errors
        if rule.when == "enum"
    }
    assert enums and learned
    episode, _ = start(world, script)
    for tool, arg, _ in enums:
        action = _calls(_call(tool, **{arg: "surely not a value"}))
        after, observation = act(world, script, episode, action)
        text = observation[0]["content"]
        if (tool, arg) in learned:  # the tool's own error, as the traces showed it
            assert text.startswith("Error") and "invalid arguments" not in text, text
            assert after.answers[-1]["path"] == "transition" and after.answers[-1]["error"]
        else:
            assert text.startswith(f"Error: invalid arguments for {tool} at '{arg}'"), text
            assert after.answers[-1]["path"] == REJECTED
