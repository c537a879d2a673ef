"""The seed loop, end to end: traces in, tasks with reference end states out, a world, episodes
played by scripted policies, then tiers from the run's rewards and the next export.

The policies are taken from the corpus's own runs of one goal (``data/retail``, whose
``truth.jsonl`` says what each run did): the tool calls of a run that succeeded, of a run
that wrote the wrong item, and of a run that claimed success without the write. Each policy
sends its tool calls as actions, then the run's closing words, and ends the episode. The
user is the world's replayed user; the policies do not read it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge_service.core.settings import Settings
from tests.forge_support import Client, forge
from tests.helpers import service_env
from tests.support_cli import run_in_process
from tests.world.test_world_api import wait_world

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail"
#: The goal the policies play (one item modification; its runs: r1 succeeded, r3 claimed
#: success without the write, r5 wrote the wrong item), and goals that teach the world more.
GOAL = "task-0294"
OTHERS = ("task-0009", "task-0018", "task-0019", "task-0023")
POLICIES = {"correct": "retail-0294-r1", "wrong_write": "retail-0294-r5", "claim": "retail-0294-r3"}
RUN = "seed-loop"
Headers = dict[str, str]


def corpus() -> tuple[str, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The traces of the goals (JSONL), every trace by id, and the truth rows by trace id."""
    truth = {
        r["trace_id"]: r for r in map(json.loads, (RETAIL / "truth.jsonl").read_text().splitlines())
    }
    lines = [
        line
        for line in (RETAIL / "traces.jsonl").read_text().splitlines()
        if truth[json.loads(line)["id"]]["goal_id"] in (GOAL, *OTHERS)
    ]
    traces = {t["id"]: t for t in map(json.loads, lines)}
    return "".join(f"{line}\n" for line in lines), traces, truth


def policy_actions(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's tool calls, one action per assistant message that made them, then the run's
    last assistant words as the closing action."""
    assistant = [m for m in trace["messages"] if m["role"] == "assistant"]
    actions = [
        {"role": "assistant", "content": None, "tool_calls": m["tool_calls"]}
        for m in assistant
        if m.get("tool_calls")
    ]
    closing = [m["content"] for m in assistant if m.get("content") and not m.get("tool_calls")]
    return [*actions, {"role": "assistant", "content": closing[-1]}]


def play(client: Client, trainer: Headers, world_id: str, task_id: str, trace: dict) -> dict:
    """One episode of ``task_id`` played by ``trace``'s policy; the last step's answer."""
    opened = client.post(
        f"/v1/worlds/{world_id}/episodes",
        json={"task_id": task_id, "seed": 1, "run_id": RUN, "step": 0},
        headers=trainer,
    )
    assert opened.status_code == 201, opened.text
    episode = opened.json()
    first = episode["observation"]["messages"]
    assert [m["role"] for m in first] == ["system", "user"], first
    assert episode["observation"]["tools"], "the tools the traces offered"
    actions = policy_actions(trace)
    for index, action in enumerate(actions):
        last = index == len(actions) - 1
        body = {"action": action, "end": True} if last else {"action": action}
        answer = client.post(
            f"/v1/episodes/{episode['episode_id']}/step", json=body, headers=trainer
        )
        assert answer.status_code == 200, answer.text
        stepped = answer.json()
        if action.get("tool_calls"):
            replies = stepped["observation"]["messages"]
            assert [m["role"] for m in replies] == ["tool"] * len(action["tool_calls"]), replies
        if stepped["done"]:
            assert last, f"ended early at action {index}: {stepped}"
            stepped["episode_id"] = episode["episode_id"]
            return stepped
    raise AssertionError("an episode the agent ended is done")


def findings(result: dict[str, Any]) -> set[str]:
    return {f["detector"] for f in result["sample"]["findings"]}


def test_traces_to_tasks_to_a_world_to_episodes_to_tiers_and_the_next_export(
    client, keys: dict[str, Headers], embedded_settings: Settings, tmp_path: Path
):
    text, traces, truth = corpus()
    assert {truth[t]["mistake"] for t in POLICIES.values()} == {None, "wrong_item", "false_claim"}

    # traces in, tasks with reference end states out
    job = forge(client, keys["reviewer"], "traces", text, mine="false")
    tasks = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"]).json()
    tasks = tasks["tasks"]
    task = next(t for t in tasks if POLICIES["correct"] in t["source"]["traces"])
    assert task["end_state"], task
    assert set(POLICIES.values()) <= set(task["source"]["traces"]), "one task for the goal"
    assert task["end_state"] == truth[POLICIES["correct"]]["reference_end_state"]

    # then a world
    queued = client.post("/v1/worlds", json={"jobs": [job["id"]]}, headers=keys["reviewer"])
    assert queued.status_code == 202, queued.text
    world = wait_world(client, keys["trainer"], queued.json()["id"])
    assert world["status"] == "done", world

    # episodes played by scripted policies
    played = {
        name: play(client, keys["trainer"], world["id"], task["id"], traces[trace_id])
        for name, trace_id in POLICIES.items()
    }
    correct, wrong, claim = played["correct"], played["wrong_write"], played["claim"]
    assert correct["reward"] == 1.0, correct["result"]
    assert correct["result"]["verdict"]["reached"] is True
    assert correct["result"]["verdict"]["diff"] == []
    assert "world_claims" not in findings(correct["result"])

    assert wrong["reward"] == 0.0, wrong["result"]
    diff = wrong["result"]["verdict"]["diff"]
    assert diff and all(d["why"] == "differs" for d in diff), diff
    assert any("items" in d["field"] for d in diff), diff  # the item it should have written

    assert claim["reward"] == 0.0, claim["result"]
    assert claim["result"]["verdict"]["reached"] is False
    assert "world_claims" in findings(claim["result"]), claim["result"]["sample"]["findings"]
    assert claim["result"]["sample"]["hack_score"] > 0

    # the episode is stored with its messages and the path of every tool answer
    stored = client.get(f"/v1/episodes/{correct['episode_id']}", headers=keys["trainer"]).json()
    assert stored["status"] == "done" and stored["answers"], stored
    assert {a["path"] for a in stored["answers"]} <= {"read", "transition", "function", "replay"}

    # then tiers: one pass in three, rewards that spread within the step
    tiers = client.get(f"/v1/runs/{RUN}/tasks", headers=keys["trainer"])
    assert tiers.status_code == 200, tiers.text
    row = next(t for t in tiers.json()["tasks"] if t["task_id"] == task["id"])
    assert row["samples"] == 3 and row["tier"] == "learnable", row
    assert row["pass_rate"] == pytest.approx(1 / 3, abs=1e-3), row

    # then the next export: the family approved, the task goes out with its tier
    items = client.get(
        "/v1/review", params={"kind": "task_family"}, headers=keys["reviewer"]
    ).json()["items"]
    family = next(i for i in items if i["payload"]["family_id"] == task["family_id"])
    decided = client.post(
        f"/v1/review/{family['id']}/decision",
        json={"decision": "approve"},
        headers=keys["reviewer"],
    )
    assert decided.status_code == 200, decided.text
    out = tmp_path / "next.jsonl"
    env = service_env(JS_DATABASE_URL=embedded_settings.database_url)
    run_in_process("forge", "export", "--run", RUN, "--out", str(out), env=env, cwd=tmp_path)
    exported = {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert exported[task["id"]]["tier"] == "learnable", exported[task["id"]]
