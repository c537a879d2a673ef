"""Worlds through the API, on both databases: a slice of the retail traces forged, a world
built from the forge job as a background job, its report (paths, transitions, fidelity beside
the exact-call replay baseline), the 4xx answers, and ``judge-service world build|show``."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from judge_service.core.settings import Settings, get_settings
from judge_service.core.storage import lost_jobs
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.types import utcnow
from judge_service.forge import store as forge_store
from judge_service.world import store as world_store
from judge_service.world.job import run_world
from tests.forge_support import Client, forge
from tests.helpers import service_env
from tests.support_cli import invoke, run_in_process

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail"
#: Goals with 4-5 runs each (26 traces) whose held-out calls take paths (a) to (d).
GOALS = ("task-0009", "task-0018", "task-0019", "task-0023", "task-0036", "task-0046")
Headers = dict[str, str]


@pytest.fixture
def embedded_settings(database_url: str) -> Settings:
    """Every test here runs on both databases; goals compared by TF-IDF (no model to load)."""
    return get_settings(
        database_url=database_url, broker_url=None, cache_url=None, forge_embeddings="tfidf"
    )


@pytest.fixture(scope="module")
def traces() -> str:
    truth = {
        r["trace_id"]: r["goal_id"]
        for r in map(json.loads, (RETAIL / "truth.jsonl").read_text().splitlines())
    }
    lines = (RETAIL / "traces.jsonl").read_text().splitlines()
    return "".join(f"{line}\n" for line in lines if truth[json.loads(line)["id"]] in GOALS)


def wait_world(client: Client, headers: Headers, world_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        world = client.get(f"/v1/worlds/{world_id}", headers=headers).json()
        if world["status"] in ("done", "failed"):
            return world
        assert time.monotonic() < deadline, world
        time.sleep(0.05)


def refused(answer: Any, status: int, *words: str) -> None:
    assert answer.status_code == status, answer.text
    assert all(w in answer.text for w in words), answer.text


def check_report(world: dict[str, Any], traces: int) -> None:
    """The figures are there and sane: counts, each tool's path shares, the fidelity."""
    assert world["status"] == "done" and world["error"] is None, world
    counts = world["counts"]
    assert counts["traces"] == traces and counts["goals"] == len(GOALS), counts
    assert counts["held_out_runs"] == counts["goals_with_repeats"] == len(GOALS)
    assert counts["entities"] > 0 and counts["tools"] == len(world["tools"]) > 0
    assert counts["writes"] >= 1 and counts["usable_transitions"] >= 1
    assert world["path_letters"]["read"] == "a" and world["path_letters"]["model_needed"] == "e"
    for name, tool in world["tools"].items():
        assert tool["effect"] in ("read", "write"), name
        assert set(tool["paths"]) == set(world["path_letters"])
        if tool["held_out_calls"]:
            assert sum(tool["paths"].values()) == pytest.approx(1.0, abs=1e-3), name
    learned = [t for t in world["tools"].values() if t.get("transitions")]
    assert learned and all(e["ops"] and e["examples"] for t in learned for e in t["transitions"])
    fidelity = world["fidelity"]
    assert fidelity["held_out_runs"] == len(GOALS)
    ours, cache = fidelity["world"], fidelity["baseline"]
    assert ours["calls"] == cache["calls"] > 0
    assert ours["exact"] >= 0.9 and ours["f1"] >= 0.95, fidelity
    assert ours["exact"] >= cache["exact"] and 0 <= cache["exact"] <= 1
    assert sum(s["calls"] for s in fidelity["by_path"].values()) == ours["calls"]
    assert set(fidelity["by_tool"]) <= set(world["tools"])
    held = sum(t["held_out_calls"] for t in world["tools"].values())
    assert held == ours["calls"]


def test_a_world_is_built_from_a_forge_job_and_reports_its_fidelity(
    client, keys: dict[str, Headers], traces: str, embedded_settings: Settings, tmp_path: Path
):
    job = forge(client, keys["reviewer"], "traces", traces, mine="false")
    body = {"jobs": [job["id"], job["id"]], "name": "retail slice"}
    queued = client.post("/v1/worlds", json=body, headers=keys["reviewer"])
    assert queued.status_code == 202, queued.text
    assert queued.json()["status"] == "queued" and queued.json()["jobs"] == [job["id"]]
    world = wait_world(client, keys["trainer"], queued.json()["id"])
    check_report(world, traces.count("\n"))
    assert world["name"] == "retail slice"
    assert run_world(world["id"], settings=embedded_settings) == "done", "not built twice"
    listed = client.get("/v1/worlds", headers=keys["trainer"]).json()["worlds"]
    assert [w["id"] for w in listed] == [world["id"]] and "tools" not in listed[0]

    # the command line: the same build, run in this process, and the report shown
    env = service_env(JS_DATABASE_URL=embedded_settings.database_url)
    built = json.loads(run_in_process("world", "build", job["id"], "--json", env=env, cwd=tmp_path))
    assert built["status"] == "done" and built["fidelity"]["world"] == world["fidelity"]["world"]
    out = tmp_path / "world.json"
    shown = run_in_process("world", "show", built["id"], "--out", str(out), env=env, cwd=tmp_path)
    assert "exact-call replay baseline" in shown and "transitions learned" in shown
    assert json.loads(out.read_text())["tools"].keys() == world["tools"].keys()
    assert built["id"] in run_in_process("world", "list", env=env, cwd=tmp_path)
    missing = invoke("world", "show", "nope", env=env, cwd=tmp_path)
    assert missing.exit_code == 2 and "no world 'nope'" in missing.stderr
    unknown = invoke("world", "build", "nope", env=env, cwd=tmp_path)
    assert unknown.exit_code == 2 and "no forge job 'nope'" in unknown.stderr

    # another project's key sees no such world and no such job
    other = {"Authorization": f"Bearer {make_key_in(embedded_settings, 'other')}"}
    refused(client.get(f"/v1/worlds/{world['id']}", headers=other), 404, world["id"])
    assert client.get("/v1/worlds", headers=other).json()["worlds"] == []
    refused(client.post("/v1/worlds", json=body, headers=other), 422, "jobs", "no forge job")


def make_key_in(settings: Settings, project: str) -> str:
    from judge_service.core.storage.keys import create_key

    with session_scope(settings.database_url) as session:
        return create_key(session=session, role="reviewer", project=project)[1]


def test_bad_builds_are_refused_naming_the_field(
    client, keys: dict[str, Headers], embedded_settings: Settings
):
    with session_scope(embedded_settings.database_url) as session:
        queued = forge_store.create_job(
            session=session, kind="traces", options={}, inputs="", created_by="test"
        ).id
    reviewer = keys["reviewer"]
    refused(client.post("/v1/worlds", json={"jobs": ["x"]}, headers=keys["trainer"]), 403)
    for body, words in (
        ({"jobs": ["nope"]}, ("jobs", "no forge job 'nope'")),
        ({"jobs": [queued]}, ("jobs", "is queued")),
        ({"jobs": []}, ('"field":"jobs"',)),
        ({"name": "w"}, ('"field":"jobs"',)),
        ({"jobs": ["a"], "nmae": "w"}, ('"field":"nmae"',)),
        ({"jobs": ["a"], "name": ""}, ('"field":"name"',)),
    ):
        refused(client.post("/v1/worlds", json=body, headers=reviewer), 422, *words)
    refused(client.get("/v1/worlds/nope", headers=keys["trainer"]), 404, "no world 'nope'")
    assert client.get("/v1/worlds", headers=reviewer).json()["worlds"] == []


def test_a_build_whose_message_was_lost_is_found_for_re_sending(embedded_settings: Settings):
    """The sweepers' query sees queued worlds like queued forge jobs (kind ``world``)."""
    url = embedded_settings.database_url
    with session_scope(url) as session:
        row = world_store.create_world(
            session=session, name=None, jobs=["j"], project="default", created_by=None
        )
        world_id = row.id
    later = utcnow() + timedelta(seconds=120)
    with session_scope(url) as session:
        lost = lost_jobs.lost_jobs(session=session, quiet_s=60, now=later)
        assert lost_jobs.LostJob("world", world_id) in lost
        claim = {"session": session, "job": lost_jobs.LostJob("world", world_id), "quiet_s": 60}
        assert lost_jobs.claim_redispatch(**claim, now=later)
        assert not lost_jobs.claim_redispatch(**claim, now=later)
    assert run_world(world_id, settings=embedded_settings) == "failed"  # its job is gone
    with session_scope(url) as session:
        failed = world_store.get_world(session=session, world_id=world_id)
        assert failed is not None and "'j'" in (failed.error or "")
    assert run_world("nope", settings=embedded_settings) == "missing"
