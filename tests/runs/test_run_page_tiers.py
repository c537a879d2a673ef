"""The run page's difficulty tiers per step: the shares of ``GET /v1/runs/{run_id}/tasks``,
drawn as a stacked bar plot and a table, without storing tiers (the page only reads)."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from tests.forge_data import bot, trace, user
from tests.forge_support import forge

RUN = "tiered-run"
#: Per group, the answers of its two rollouts against the reference "4": always right, never
#: right, and one of each (the only group with a reward spread, so the only learnable one).
ANSWERS = {"g-easy": ["4", "4"], "g-hard": ["5", "6"], "g-mixed": ["4", "5"]}


def score_steps(
    client: TestClient, trainer: dict[str, str], steps: int, task_ids: dict[str, str] | None = None
) -> None:
    """Score ``ANSWERS`` at each step; ``task_ids`` puts a ``metadata.task_id`` on a group."""
    task_ids = task_ids or {}
    for step in range(steps):
        samples = [
            {
                "id": f"{group}-{n}",
                "group_id": group,
                "prompt": "What is 2 + 2?",
                "completion": answer,
                "reference": "4",
                "metadata": {"task_id": task_ids[group]} if group in task_ids else {},
            }
            for group, given in ANSWERS.items()
            for n, answer in enumerate(given)
        ]
        body = {"samples": samples, "judges": ["reference_match"], "run_id": RUN, "step": step}
        answer = client.post("/v1/rewards", json=body, headers=trainer)
        assert answer.status_code == 200, answer.text


def test_the_run_page_shows_each_steps_tier_shares(client: TestClient, keys):
    score_steps(client, keys["trainer"], steps=2)
    html = client.get(f"/runs/{RUN}", headers=keys["reviewer"]).text
    api = client.get(f"/v1/runs/{RUN}/tasks", headers=keys["reviewer"]).json()
    assert api["tiers"] == {"too_easy": 1, "learnable": 1, "too_hard": 1}

    section = re.search(
        r'<section class="card" aria-label="Difficulty tiers">(.*?)</section>', html, re.S
    )
    assert section, "no tier section on the run page"
    body = section.group(1)
    for step in ("0", "1"):
        assert api["steps"][step] == pytest.approx(
            {"too_easy": 1 / 3, "learnable": 1 / 3, "too_hard": 1 / 3}
        )
        row = re.search(rf'<tr data-tier-step="{step}">(.*?)</tr>', body, re.S)
        assert row, f"no table row for step {step}"
        cells = dict(re.findall(r'data-tier="(\w+)">([^<]+)<', row.group(1)))
        assert cells == {"too_easy": "33%", "learnable": "33%", "too_hard": "33%"}
        for tier in ("too_easy", "learnable", "too_hard"):
            assert f'<g id="tiers-{tier}-{step}">' in body
    assert "the only tasks GRPO learns from" in body
    assert '<g id="tiers-too_easy-2">' not in body  # one bar per scored step, no more


def test_a_step_where_one_task_stops_appearing_changes_its_shares(client: TestClient, keys):
    score_steps(client, keys["trainer"], steps=1)
    body = {
        "samples": [
            {
                "id": f"e-{n}",
                "group_id": "g-easy",
                "prompt": "2 + 2?",
                "completion": "4",
                "reference": "4",
            }
            for n in range(2)
        ],
        "judges": ["reference_match"],
        "run_id": RUN,
        "step": 1,
    }
    assert client.post("/v1/rewards", json=body, headers=keys["trainer"]).status_code == 200
    html = client.get(f"/runs/{RUN}", headers=keys["reviewer"]).text
    row = re.search(r'<tr data-tier-step="1">(.*?)</tr>', html, re.S)
    assert row and dict(re.findall(r'data-tier="(\w+)">([^<]+)<', row.group(1))) == {
        "too_easy": "100%",
        "learnable": "0%",
        "too_hard": "0%",
    }


def test_the_page_stores_no_tier_where_the_api_does(client: TestClient, keys):
    line = json.dumps(trace("t1", user("How do I log in to online banking?"), bot("Use the app.")))
    job = forge(client, keys["reviewer"], "traces", line + "\n")
    tasks = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"]).json()
    (task,) = tasks["tasks"]
    score_steps(client, keys["trainer"], steps=1, task_ids={"g-easy": task["id"]})

    def stored() -> list[str]:
        found = client.get("/v1/tasks", params={"tier": "too_easy"}, headers=keys["trainer"])
        return [t["id"] for t in found.json()["tasks"]]

    assert "data-tier-step" in client.get(f"/runs/{RUN}", headers=keys["reviewer"]).text
    assert stored() == []
    assert client.get(f"/v1/runs/{RUN}/tasks", headers=keys["reviewer"]).status_code == 200
    assert stored() == [task["id"]]  # the API path stores it, so the check above could fail
