"""A user with tools of their own, through a real ``serve`` on both databases.

The radio corpus of :mod:`tests.world.test_world_user_side`, with the tool schemas its runs
offered (the agent's and the user's alike, as a careless export lists them), forged and built
into a world over HTTP. Then the report names the user's tools; a reset offers the agent
only its own; the user checks and switches the radio when the agent asks, and the episode
ends reached, with the user's calls in its answers and their side among the touched entities;
``verify`` of a recorded run counts the user's write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.world.user_side import SIDE_KEY
from tests.episodes.test_world_episodes_api import bearer, built_world
from tests.helpers import Server, service_env
from tests.world.test_world_user_side import OFF, run

SCHEMAS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("get_account", "toggle_radio", "check_status")
]


def _corpus() -> str:
    runs = [{**run(f"radio-{i}", fixed=True), "tools": SCHEMAS} for i in range(3)]
    return "".join(json.dumps(r) + "\n" for r in runs)


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@pytest.fixture
def radio_world(database_url: str, tmp_path: Path):
    env = service_env(
        JS_DATABASE_URL=database_url,
        JS_FORGE_EMBEDDINGS="tfidf",
        JS_LOCAL_MODEL_URL="http://127.0.0.1:9/v1",
    )
    keys = {role: bearer(database_url, role) for role in ("trainer", "reviewer", "admin")}
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    client = httpx.Client(base_url=server.url, timeout=60)
    try:
        world, tasks = built_world(client, keys, _corpus())
        assert len(tasks) == 1, tasks
        yield client, keys, world, tasks[0]
    finally:
        client.close()
        server.kill()


def test_a_served_user_uses_their_tools_when_asked(radio_world) -> None:
    client, keys, world, task = radio_world
    report = world["tools"]
    assert report["toggle_radio"]["caller"] == "user" and "caller" not in report["get_account"]
    reset = client.post(
        f"/v1/worlds/{world['id']}/episodes", json={"task_id": task["id"]}, headers=keys["trainer"]
    )
    assert reset.status_code == 201, reset.text
    opened = reset.json()
    assert [t["function"]["name"] for t in opened["observation"]["tools"]] == ["get_account"]
    episode_id = opened["episode_id"]
    replies = []
    answer: dict[str, Any] = {}
    for text in (
        "Please run check_status on your phone and tell me what it shows.",
        "Switch it on with toggle_radio, then run check_status again.",
    ):
        step = client.post(
            f"/v1/episodes/{episode_id}/step", json={"action": _say(text)}, headers=keys["trainer"]
        )
        assert step.status_code == 200, step.text
        answer = step.json()
        replies += [m["content"] for m in answer["observation"]["messages"]]
    assert replies == ["It says the radio is off.", "It works now, thanks!"]
    assert answer["done"] and answer["result"]["verdict"]["reward"] == 1.0
    got = client.get(f"/v1/episodes/{episode_id}", headers=keys["trainer"]).json()
    by_user = [(a["tool"], a["answer"]) for a in got["answers"] if a.get("by") == "user"]
    assert by_user[0] == ("check_status", OFF) and by_user[1][0] == "toggle_radio"
    assert got["touched"][SIDE_KEY] == {"radio": "ON", "signal": "good"}
    assert all(got["messages"][a["message"]]["role"] == "user" for a in got["answers"])
    recorded = run("recorded", fixed=True)["messages"]
    verified = client.post(
        f"/v1/worlds/{world['id']}/verify",
        json={"task_id": task["id"], "messages": recorded},
        headers=keys["reviewer"],
    )
    assert verified.status_code == 200, verified.text
    assert verified.json()["verdict"]["reward"] == 1.0
    unfixed = run("unfixed", fixed=False)["messages"]
    verified = client.post(
        f"/v1/worlds/{world['id']}/verify",
        json={"task_id": task["id"], "messages": unfixed},
        headers=keys["reviewer"],
    )
    assert verified.json()["verdict"]["reward"] == 0.0
