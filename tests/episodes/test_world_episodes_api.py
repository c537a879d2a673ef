"""Episodes over a world through a real ``serve``, on both databases: a slice of the retail
traces forged and built into a world over HTTP, then reset/step/state played by a scripted
policy (the traced agent's messages replayed), ``verify`` of recorded trajectories, the 4xx
answers, the per-key limit on open episodes, a restart of ``serve`` mid-episode, and 200
fuzzed actions that get no 5xx."""

from __future__ import annotations

import json
import random
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.core.storage.db import session_scope
from judge_service.core.storage.keys import create_key
from judge_service.forge.tables import ForgeTaskRow
from judge_service.traces.conversation import Trace, content_text, parse_traces
from judge_service.traces.goals import user_words
from judge_service.world import store as world_store
from tests.forge_support import forge
from tests.helpers import Server, service_env, wait_until

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail"
#: Goals with 4-5 runs each whose writes the world learns (as in tests/world/test_world_api.py).
GOALS = ("task-0009", "task-0018", "task-0023")
#: The per-key limit of open episodes the served process is given.
LIMIT = 3
#: Steps of one episode sent at once.
CONCURRENT = 24
PATHS = {"read", "transition", "function", "replay", "model_needed", "rejected"}
Headers = dict[str, str]


def goal_traces(goals: tuple[str, ...] = GOALS) -> str:
    """The JSONL of the corpus's traces of ``goals``."""
    truth = {
        r["trace_id"]: r["goal_id"]
        for r in map(json.loads, (RETAIL / "truth.jsonl").read_text().splitlines())
    }
    lines = (RETAIL / "traces.jsonl").read_text().splitlines()
    return "".join(f"{line}\n" for line in lines if truth[json.loads(line)["id"]] in goals)


# --- the scripted policy: the traced agent, replayed -------------------------------------


def replay_actions(observation: list[dict[str, Any]], traces: dict[str, Trace]) -> list[dict]:
    """The assistant messages that followed the user's opening turn in the run whose user
    the episode replays (found by that turn's words), in order: a policy that does what the
    traced agent did."""
    opening = content_text(observation[-1]["content"]).strip()
    for trace in traces.values():
        for index, message in enumerate(trace.messages):
            said = user_words(content_text(message.get("content")))
            if message.get("role") == "user" and said == opening:
                return [
                    {k: v for k, v in m.items() if k in ("role", "content", "tool_calls")}
                    for m in trace.messages[index + 1 :]
                    if m.get("role") == "assistant"
                ]
    raise AssertionError(f"no traced run opens with {opening!r}")


@dataclass
class Played:
    episode_id: str
    observed: list[dict[str, Any]]  # every observation's messages, in order
    last: dict[str, Any]  # the last step's answer
    sources: list[dict[str, Any]]  # the steps' observations' sources, in order


def play(
    client: httpx.Client,
    headers: Headers,
    episode_id: str,
    observed: list[dict[str, Any]],
    actions: list[dict],
    *,
    end: bool = True,
) -> Played:
    """Send ``actions`` one by one until the episode is done (``end``: the last one ends it
    if the episode is still open then)."""
    observed = list(observed)
    answer: dict[str, Any] = {}
    sources: list[dict[str, Any]] = []
    for number, action in enumerate(actions):
        body = {"action": action, "end": end and number == len(actions) - 1}
        response = client.post(f"/v1/episodes/{episode_id}/step", json=body, headers=headers)
        assert response.status_code == 200, response.text
        answer = response.json()
        observation = answer["observation"]
        assert len(observation["sources"]) == len(observation["messages"]), observation
        observed += observation["messages"]
        sources += observation["sources"]
        if answer["done"]:
            break
    return Played(episode_id, observed, answer, sources)


def not_agent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] != "assistant"]


# --- a served world ----------------------------------------------------------------------


@dataclass
class Served:
    server: Server
    client: httpx.Client
    keys: dict[str, Headers]
    env: dict[str, str]
    world_id: str
    tasks: list[dict[str, Any]]
    traces: dict[str, Trace]
    tmp: Path

    def restart(self) -> None:
        """``serve`` killed outright and started again on the same database."""
        self.server.kill(signal.SIGKILL)
        self.server = Server(env=self.env, cwd=self.tmp, log=self.tmp / "serve-again.log")
        self.client.close()
        self.client = httpx.Client(base_url=self.server.url, timeout=60)


def bearer(url: str, role: str, project: str = "default") -> Headers:
    with session_scope(url) as session:
        return {
            "Authorization": f"Bearer {create_key(session=session, role=role, project=project)[1]}"
        }


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[Served]:
    """``serve`` (embedded) on the database, a world built over HTTP from a forge job of
    the goals' traces, and keys of every role (``other``: a trainer of another project)."""
    env = service_env(
        JS_DATABASE_URL=database_url,
        JS_FORGE_EMBEDDINGS="tfidf",
        JS_LOCAL_MODEL_URL="http://127.0.0.1:9/v1",  # no local judge to build or call
        JS_EPISODES_OPEN_PER_KEY=str(LIMIT),
    )
    keys = {role: bearer(database_url, role) for role in ("trainer", "reviewer", "admin")}
    keys["limited"] = bearer(database_url, "trainer")
    keys["other"] = bearer(database_url, "admin", "other")
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    client = httpx.Client(base_url=server.url, timeout=60)
    served = None
    try:
        text = goal_traces()
        world, tasks = built_world(client, keys, text)
        tasks = [t for t in tasks if t["end_state"]]
        assert len(tasks) >= 2, tasks
        traces = {t.id: t for t in parse_traces(text)}
        served = Served(server, client, keys, env, world["id"], tasks, traces, tmp_path)
        yield served
    finally:
        client.close()
        server.kill()
        if served is not None:  # the one a restart started
            served.client.close()
            served.server.kill()


def built_world(
    client: httpx.Client, keys: dict[str, Headers], text: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The traces forged, and a world built from the job over HTTP: the world (done) and
    the job's trace tasks."""
    job = forge(client, keys["reviewer"], "traces", text, mine="false")
    built = client.post("/v1/worlds", json={"jobs": [job["id"]]}, headers=keys["reviewer"])
    assert built.status_code == 202, built.text
    world = wait_until(
        lambda: (
            (w := client.get(f"/v1/worlds/{built.json()['id']}", headers=keys["admin"]))
            and w.json()["status"] in ("done", "failed")
            and w.json()
        ),
        timeout=120,
    )
    assert world and world["status"] == "done", world
    listed = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["admin"])
    return world, [t for t in listed.json()["tasks"] if t["kind"] == "trace"]


def reset(served: Served, task_id: str, key: str = "trainer", **extra: Any) -> httpx.Response:
    body = {"task_id": task_id, **extra}
    url = f"/v1/worlds/{served.world_id}/episodes"
    return served.client.post(url, json=body, headers=served.keys[key])


def opened(served: Served, task_id: str, **extra: Any) -> tuple[str, list[dict], list[dict]]:
    response = reset(served, task_id, **extra)
    assert response.status_code == 201, response.text
    answer = response.json()
    messages, sources = answer["observation"]["messages"], answer["observation"]["sources"]
    assert [s["source"] for s in sources] == [m["role"] for m in messages]  # system, user
    assert [s["by"] for s in sources] == [None] * (len(messages) - 1) + ["replay"]
    return answer["episode_id"], messages, answer["observation"]["tools"]


def refused(answer: httpx.Response, status: int, *words: str) -> None:
    assert answer.status_code == status, answer.text
    assert all(w in answer.text for w in words), answer.text


def state(served: Served, episode_id: str, key: str = "trainer") -> dict[str, Any]:
    got = served.client.get(f"/v1/episodes/{episode_id}", headers=served.keys[key])
    assert got.status_code == 200, got.text
    return got.json()


# --- the tests ---------------------------------------------------------------------------


def test_episodes_are_played_verified_limited_and_survive_a_restart(served: Served) -> None:
    client, keys = served.client, served.keys
    rewards = []
    for task in served.tasks:
        episode_id, observation, tools = opened(served, task["id"], run_id="run-1", step=3)
        assert [m["role"] for m in observation] == ["system", "user"] and tools
        played = play(
            client,
            keys["trainer"],
            episode_id,
            observation,
            replay_actions(observation, served.traces),
        )
        answer = played.last
        assert answer["done"] is True, answer
        verdict = answer["result"]["verdict"]
        assert verdict["reward"] in (0.0, 1.0) and verdict["reached"] is (verdict["reward"] == 1.0)
        rewards.append(verdict["reward"])
        sample = answer["result"]["sample"]  # the reward path: one sample of run-1, step 3
        assert sample["id"] == episode_id and sample["valid"], sample
        assert sample["components"]["judge/world_end_state"] == verdict["reward"], sample
        assert answer["reward"] == sample["reward"], answer  # the audit's penalty included
        stored = state(served, episode_id)
        assert stored["status"] == "done" and stored["result"] == answer["result"]
        assert not_agent(stored["messages"]) == played.observed
        assert stored["run_id"] == "run-1" and stored["step"] == 3 and stored["turns"] >= 1
        tool_messages = [i for i, m in enumerate(stored["messages"]) if m["role"] == "tool"]
        assert [a["message"] for a in stored["answers"]] == tool_messages
        assert {a["path"] for a in stored["answers"]} <= PATHS
        check_sources(stored, played)
        assert set(stored["touched"]) == set(verdict["touched"])
        again = client.post(
            f"/v1/episodes/{episode_id}/step",
            json={"action": {"content": "hi"}},
            headers=keys["trainer"],
        )
        refused(again, 409, "is done")
    assert rewards == [1.0] * len(served.tasks), rewards  # the traced agents succeeded

    check_verify(served)
    check_concurrent_steps(served)
    check_refusals(served)
    check_limit(served)
    check_without_reference(served)
    check_restart(served, served.tasks[0])


def check_sources(stored: dict[str, Any], played: Played) -> None:
    """Every message says whose words it is, in the state and in each step's observation:
    the world's answers with their paths (no model here: none simulated), the replayed
    user's turns, the agent's actions."""
    messages, sources = stored["messages"], stored["sources"]
    assert len(sources) == len(messages)
    whose = {"system": "system", "assistant": "agent", "tool": "world", "user": "user"}
    assert [s["source"] for s in sources] == [whose[m["role"]] for m in messages]
    paths = {a["message"]: a["path"] for a in stored["answers"]}
    for index, source in enumerate(sources):
        if source["source"] == "world":
            assert (source["path"], source["simulated"]) == (paths[index], False), source
        else:
            assert source["path"] is None and source["simulated"] is None, source
        assert source["by"] == ("replay" if source["source"] == "user" else None), source
    assert {"world", "user"} <= {s["source"] for s in played.sources}
    assert played.sources == [s for s in sources[2:] if s["source"] != "agent"]


def check_verify(served: Served) -> None:
    """A recorded run replayed from the task's start: the run that did the work reaches the
    reference; its talk without the tool calls does not, and the diff says where."""
    task = served.tasks[0]
    run = next(served.traces[t] for t in task["source"]["traces"] if t in served.traces)
    url = f"/v1/worlds/{served.world_id}/verify"
    body = {"task_id": task["id"], "messages": run.messages}
    whole = served.client.post(url, json=body, headers=served.keys["reviewer"])
    assert whole.status_code == 200, whole.text
    calls = whole.json()["calls"]
    assert calls and all(c["path"] in PATHS for c in calls)
    talk_only = [m for m in run.messages if m["role"] != "assistant" or not m.get("tool_calls")]
    body = {"task_id": task["id"], "messages": talk_only}
    nothing = served.client.post(url, json=body, headers=served.keys["trainer"]).json()
    assert whole.json()["verdict"]["reached"] is True, whole.json()["verdict"]
    assert nothing["calls"] == [] and nothing["verdict"]["reward"] == 0.0, nothing
    whys = {d["why"] for d in nothing["verdict"]["diff"]}
    assert whys and whys <= {"missing", "differs"}, nothing  # nothing unrequested was done


def check_concurrent_steps(served: Served) -> None:
    """Steps of one episode sent at once: each is played on the episode as the one before
    it left it (none lost, none applied twice, none refused)."""
    episode_id, _, _ = opened(served, served.tasks[0]["id"], max_turns=100)
    url, headers = f"{served.server.url}/v1/episodes/{episode_id}/step", served.keys["trainer"]

    def send(number: int) -> int:
        call = {"id": f"c{number}", "function": {"name": f"no_tool_{number}", "arguments": "{}"}}
        body = {"action": {"tool_calls": [call]}}
        return httpx.post(url, json=body, headers=headers, timeout=60).status_code

    with ThreadPoolExecutor(CONCURRENT) as pool:
        assert list(pool.map(send, range(CONCURRENT))) == [200] * CONCURRENT
    stored = state(served, episode_id)
    assert stored["turns"] == CONCURRENT and len(stored["answers"]) == CONCURRENT
    calls = [m["tool_calls"][0]["id"] for m in stored["messages"] if m["role"] == "assistant"]
    assert sorted(calls) == sorted(f"c{n}" for n in range(CONCURRENT))
    assert all(a["path"] == "rejected" for a in stored["answers"])


def check_without_reference(served: Served) -> None:
    """A task without a reference end state is refused, unless played without one
    (``"reference": "none"``): it plays, and its reward and its sample say there is none."""
    task = served.tasks[1]
    url = served.env["JS_DATABASE_URL"]
    with session_scope(url) as session:
        row = session.get(ForgeTaskRow, task["id"])
        kept, row.end_state = row.end_state, None
    try:
        refused(reset(served, task["id"]), 422, '"field":"task_id"', '\\"reference\\": \\"none\\"')
        refused(reset(served, task["id"], reference="maybe"), 422, '"field":"reference"')
        answer = reset(served, task["id"], reference="none", max_turns=3)
        assert answer.status_code == 201, answer.text
        episode_id = answer.json()["episode_id"]
        observation = answer.json()["observation"]["messages"]
        actions = replay_actions(observation, served.traces)
        last = play(served.client, served.keys["trainer"], episode_id, observation, actions).last
        assert last["done"] and last["reward"] is None, last
        sample = last["result"]["sample"]
        assert (sample["valid"], sample["failure_kind"]) == (False, "bad_sample"), sample
        assert "without a reference end state" in sample["failure_reason"], sample
    finally:
        with session_scope(url) as session:
            session.get(ForgeTaskRow, task["id"]).end_state = kept


def check_refusals(served: Served) -> None:
    client, keys, task_id = served.client, served.keys, served.tasks[0]["id"]
    world_url = f"/v1/worlds/{served.world_id}/episodes"
    refused(
        client.post("/v1/worlds/nope/episodes", json={"task_id": task_id}, headers=keys["trainer"]),
        404,
        "no world 'nope'",
    )
    refused(reset(served, "nope"), 422, '"field":"task_id"', "no forge task 'nope'")
    refused(reset(served, task_id, key="reviewer"), 403, "trainer")
    refused(reset(served, task_id, key="other"), 404, "no world")
    for body, field in (
        ({}, "task_id"),
        ({"task_id": task_id, "sead": 1}, "sead"),
        ({"task_id": task_id, "max_turns": 0}, "max_turns"),
        ({"task_id": task_id, "seed": -1}, "seed"),
        ({"task_id": task_id, "step": 2**31}, "step"),
        ({"task_id": ""}, "task_id"),
    ):
        refused(
            client.post(world_url, json=body, headers=keys["trainer"]), 422, f'"field":"{field}"'
        )
    with session_scope(served.env["JS_DATABASE_URL"]) as session:
        queued = world_store.create_world(
            session=session, name=None, jobs=[], project="default", created_by=None
        ).id
    body = {"task_id": task_id}
    refused(
        client.post(f"/v1/worlds/{queued}/episodes", json=body, headers=keys["trainer"]),
        409,
        "is queued",
    )
    refused(
        client.post(
            f"/v1/worlds/{queued}/verify", json={**body, "messages": []}, headers=keys["trainer"]
        ),
        409,
        "is queued",
    )

    episode_id, _, _ = opened(served, task_id)
    step_url = f"/v1/episodes/{episode_id}/step"
    refused(client.post(step_url, json={}, headers=keys["trainer"]), 422, '"field":"action"')
    refused(
        client.post(step_url, json={"action": {}, "end": "yes"}, headers=keys["trainer"]),
        422,
        '"field":"end"',
    )
    refused(
        client.post(step_url, json={"action": {}, "ned": True}, headers=keys["trainer"]),
        422,
        '"field":"ned"',
    )
    refused(
        client.post(
            step_url,
            content=b"{not json",
            headers={**keys["trainer"], "content-type": "application/json"},
        ),
        400,
        "malformed_json",
    )
    refused(client.post(step_url, json={"action": {}}, headers=keys["reviewer"]), 403)
    refused(client.post(step_url, json={"action": {}}, headers=keys["other"]), 404, "no episode")
    refused(client.get(f"/v1/episodes/{episode_id}", headers=keys["other"]), 404, "no episode")
    refused(client.get(f"/v1/episodes/{episode_id}", headers=keys["reviewer"]), 403)
    refused(
        client.post("/v1/episodes/nope/step", json={"action": {}}, headers=keys["trainer"]),
        404,
        "no episode 'nope'",
    )
    refused(client.get(f"/v1/episodes/{episode_id}"), 401)
    assert state(served, episode_id)["status"] == "open"  # nothing refused changed it
    assert (
        state(served, episode_id, key="admin")["messages"] == state(served, episode_id)["messages"]
    )
    ended = client.post(step_url, json={"action": {}, "end": True}, headers=keys["trainer"]).json()
    assert ended["done"] and state(served, episode_id)["ended_by"] == "agent"


def check_limit(served: Served) -> None:
    """A key holds at most ``LIMIT`` open episodes; ending one frees a place; other keys
    are not limited by it."""
    task_id = served.tasks[0]["id"]
    opened_ids = []
    for _ in range(LIMIT):
        response = reset(served, task_id, key="limited")
        assert response.status_code == 201, response.text
        opened_ids.append(response.json()["episode_id"])
    refused(reset(served, task_id, key="limited"), 429, "JS_EPISODES_OPEN_PER_KEY", str(LIMIT))
    assert reset(served, task_id, key="admin").status_code == 201
    end = {"action": {}, "end": True}
    step_url = f"/v1/episodes/{opened_ids[0]}/step"
    assert served.client.post(step_url, json=end, headers=served.keys["limited"]).json()["done"]
    assert reset(served, task_id, key="limited").status_code == 201
    refused(reset(served, task_id, key="limited"), 429, "too_many_episodes")


def check_restart(served: Served, task: dict[str, Any]) -> None:
    """Half an episode, ``serve`` killed and started again on the same database, the
    other half: the stored episode is the whole of it and the verdict is what an
    uninterrupted play of the same actions gets."""
    episode_id, observation, _ = opened(served, task["id"], seed=1)
    actions = replay_actions(observation, served.traces)
    half = max(1, len(actions) // 2)
    first = play(
        served.client, served.keys["trainer"], episode_id, observation, actions[:half], end=False
    )
    assert not first.last["done"], "the episode is still open at the restart"
    before = state(served, episode_id)
    assert before["status"] == "open" and not_agent(before["messages"]) == first.observed
    served.restart()
    assert state(served, episode_id) == before  # nothing lost
    rest = play(served.client, served.keys["trainer"], episode_id, first.observed, actions[half:])
    assert rest.last["done"]
    after = state(served, episode_id)
    assert not_agent(after["messages"]) == rest.observed

    whole_id, observation, _ = opened(served, task["id"], seed=1)
    whole = play(served.client, served.keys["trainer"], whole_id, observation, actions)
    assert state(served, whole_id)["messages"] == after["messages"]
    assert whole.last["result"]["verdict"] == rest.last["result"]["verdict"]


# --- fuzzing -----------------------------------------------------------------------------

ODD_TEXT = ["", " ", "\x00", "\u202e\u0645\u0631\u062d\u0628\u0627", "🧪" * 50, "\ufeff", "é\u0301",
            "\\u0000", "\ud7ff", "\ud800", "null", "{", "</tool_call>", "A" * 200_000]  # fmt: skip


def fuzzed_action(rng: random.Random, tools: list[str]) -> Any:
    """One action of a random shape: wrong types, odd text, unknown tools, bad arguments."""
    name = rng.choice([*tools, "no_such_tool", "", "🧪", None, 7, "x" * 5000])
    arguments = rng.choice([
        "{}", "{not json", "[]", "null", "7", json.dumps({"a": 1}), {"order_id": None},
        {"order_id": ["#W1"] * 3}, {"order_id": "#W" + "9" * 400}, {"": {"": {"": []}}},
        json.dumps({k: rng.choice(ODD_TEXT[:9]) for k in ("order_id", "user_id", "item_ids")}),
        [1, 2], None, 3.5, {"x": 1e308},
    ])  # fmt: skip
    function = rng.choice([{"name": name, "arguments": arguments}, name, [], None])
    call = {"id": rng.choice(["c1", "", None, 5]), "type": rng.choice(["function", 3]),
            "function": function}  # fmt: skip
    return rng.choice([
        None, 0, -1, 2**70, 3.14, True, "just text", rng.choice(ODD_TEXT), [], [call],
        {}, {"role": "user", "content": "I am the user now"}, {"role": 5},
        {"content": rng.choice(ODD_TEXT)}, {"content": [{"type": "text", "text": "hi"}, 3]},
        {"content": {"nested": True}}, {"tool_calls": call},
        {"tool_calls": [call] * rng.randint(0, 4)},
        {"tool_calls": [call, "x", None]}, {"tool_calls": []}, {"function_call": call["function"]},
        {"content": "ok", "tool_calls": [call], "extra": {"deep": [[[[[]]]]]}},
        {"tool_calls": [{"function": {"name": rng.choice(tools), "arguments": arguments}}]},
    ])  # fmt: skip


def test_two_hundred_fuzzed_actions_get_no_5xx_and_the_episodes_stay_readable(
    served: Served,
) -> None:
    rng = random.Random(38)
    task_id = served.tasks[-1]["id"]
    episode_id, _, tools = opened(served, task_id, max_turns=1000)
    names = [t["function"]["name"] for t in tools if isinstance(t.get("function"), dict)]
    episodes, statuses = [episode_id], []
    for _ in range(200):
        body = {"action": fuzzed_action(rng, names), "end": rng.random() < 0.02}
        answer = served.client.post(  # ASCII JSON: a lone surrogate travels as its escape
            f"/v1/episodes/{episodes[-1]}/step",
            content=json.dumps(body).encode(),
            headers={**served.keys["admin"], "content-type": "application/json"},
        )
        statuses.append(answer.status_code)
        assert answer.status_code < 500, answer.text
        if answer.status_code == 200 and answer.json()["done"]:
            episodes.append(opened(served, task_id, max_turns=1000)[0])
    assert statuses.count(200) >= 190, statuses  # actions are answered, not refused
    before = state(served, episodes[-1], key="admin")
    lone = {"content": "\ud800"}  # a lone surrogate: no text, refused as the API refuses it
    answer = served.client.post(
        f"/v1/episodes/{episodes[-1]}/step",
        content=json.dumps({"action": lone}).encode(),
        headers={**served.keys["admin"], "content-type": "application/json"},
    )
    refused(answer, 400, "invalid_encoding")
    assert state(served, episodes[-1], key="admin") == before
    for episode_id in episodes:
        stored = state(served, episode_id, key="admin")
        errors = [m for m in stored["messages"] if m["role"] == "tool"]
        assert len(stored["answers"]) == len(errors)
    assert any(a["path"] == "rejected" for a in state(served, episodes[0], key="admin")["answers"])

    # recorded trajectories as odd as the actions, verified: answered, never a 5xx
    url, verified = f"/v1/worlds/{served.world_id}/verify", []
    for _ in range(40):
        messages = [
            {"role": rng.choice(["assistant", "assistant", "tool", "user", "robot", 7]), **a}
            for a in (fuzzed_action(rng, names) for _ in range(rng.randint(0, 6)))
            if isinstance(a, dict)
        ]
        body = json.dumps({"task_id": task_id, "messages": messages}).encode()
        headers = {**served.keys["reviewer"], "content-type": "application/json"}
        answer = served.client.post(url, content=body, headers=headers)
        assert answer.status_code < 500, answer.text
        verified.append(answer.status_code)
    assert verified.count(200) >= 30, verified
