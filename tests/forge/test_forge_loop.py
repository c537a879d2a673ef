"""The continual loop, end to end, on SQLite and PostgreSQL: traces and documents in, tasks
forged against the fake model server, families approved, export, a real TRL GRPOTrainer for 2
steps with rewards from the service, the run's tiers, and the next export by tier."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.fakes import FakeOpenAIServer
from tests.forge_data import ALETSCH, BELL_ROCK, DOCUMENTS, traces, write_jsonl
from tests.forge_support import spec
from tests.helpers import Server, create_key, run_cli, service_env
from trainer_bridge.trl import build_samples

ROOT = Path(__file__).resolve().parents[2]
#: What the reward judge gives each task's rollouts: always full marks (too easy), or
#: alternating (learnable). The first match wins, so the debit-card trace (which also asks
#: about the daily limit) comes first.
REWARDS = [
    ("order me a new debit card", [1.0, 0.0]),
    ("largest in the Alps", [1.0]),
    ("freeze my credit card", [1.0]),
    ("reset my online banking password", [0.0, 1.0]),
    ("daily limit for card withdrawals", [1.0, 0.0]),
]


def script(fake: FakeOpenAIServer) -> None:
    fake.configure(
        "gen",
        replies=[
            {"match": "Aletsch", "contents": [ALETSCH]},
            {"match": "Bell Rock", "contents": [BELL_ROCK]},
        ],
    )
    fake.configure(
        "ver",
        replies=[
            {"match": "Aletsch", "contents": [{"answer": "the Aletsch Glacier"}]},
            {"match": "Bell Rock", "contents": [{"answer": "Robert Stevenson"}]},
        ],
    )
    fake.configure(
        "sol",
        replies=[
            {"match": "largest", "contents": [{"answer": "Aletsch Glacier"}, {"answer": "Rhone"}]},
            {"match": "Bell Rock", "contents": [{"answer": "Robert Stevenson"}]},
        ],
    )
    fake.configure("policy-judge", replies=[{"match": m, "scores": s} for m, s in REWARDS])


def cli_json(*args: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    return json.loads(run_cli(*args, env=env, cwd=cwd, timeout=300))


def exported(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_trl_forwards_reference_and_task_id_from_dataset_columns():
    samples = build_samples(
        ["q1", "q2"], ["a", "b"], reference=["r1", None], task_id=["t1", "t2"], tools=[None, None]
    )
    assert samples[0]["reference"] == "r1" and "reference" not in samples[1]
    assert [s["metadata"] for s in samples] == [{"task_id": "t1"}, {"task_id": "t2"}]


def test_the_loop_from_traces_to_training_and_back(
    database_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    script(fake)
    env = service_env(JS_DATABASE_URL=database_url, JS_DETECTORS="none")
    reviewer = {"Authorization": f"Bearer {create_key('reviewer', env=env, cwd=tmp_path)}"}
    trainer_key = create_key("trainer", env=env, cwd=tmp_path)
    trace_file = write_jsonl(tmp_path / "traces.jsonl", traces())
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text)

    miner = json.dumps(spec(fake, "miner"))
    from_traces = cli_json(
        "forge", "traces", str(trace_file), "--miner", miner, "--json", env=env, cwd=tmp_path
    )
    assert from_traces["status"] == "done" and from_traces["counts"]["tasks"] == 4
    assert from_traces["counts"]["duplicates_merged"] == 4
    from_docs = cli_json(
        "forge",
        "documents",
        str(folder),
        "--generator",
        json.dumps(spec(fake, "gen")),
        "--verifier",
        json.dumps(spec(fake, "ver")),
        "--solver",
        json.dumps(spec(fake, "sol")),
        "--samples-per-task",
        "2",
        env=env,
        cwd=tmp_path,
    )
    assert from_docs["counts"]["tasks"] == 1 and from_docs["counts"]["dropped"]["too_easy"] == 1

    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as api:
            items = api.get("/v1/review", params={"kind": "task_family"}, headers=reviewer).json()[
                "items"
            ]
            assert len(items) == len(from_traces["families"]) + len(from_docs["families"])
            for item in items:
                decided = api.post(
                    f"/v1/review/{item['id']}/decision",
                    json={"decision": "approve"},
                    headers=reviewer,
                )
                assert decided.status_code == 200, decided.text
            export = tmp_path / "tasks.jsonl"
            assert run_cli(
                "forge", "export", "--out", str(export), env=env, cwd=tmp_path
            ).startswith("5 tasks")
            from datasets import load_dataset

            dataset = load_dataset("json", data_files=str(export), split="train")
            assert {"prompt", "reference", "task_id"} <= set(dataset.column_names)
            assert len(dataset) == 5 and "The Aletsch Glacier" in dataset["reference"]

            judge = spec(fake, "policy-judge")
            done = subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "trainer_bridge/examples/grpo_forged_tasks.py"),
                    "--smoke",
                    "--tasks",
                    str(export),
                    "--service-url",
                    server.url,
                    "--api-key",
                    trainer_key,
                    "--run-id",
                    "forged-1",
                    "--judges",
                    json.dumps([judge]),
                    "--prompts-per-step",
                    "5",
                    "--output-dir",
                    str(tmp_path / "grpo"),
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            summary = json.loads(done.stdout.strip().splitlines()[-1])
            assert summary["steps"] == 2 and summary["rewards"] == 40 and summary["masked"] == 0

            tiers = api.get("/v1/runs/forged-1/tasks", headers=reviewer).json()
        by_task = {t["task_id"]: t for t in tiers["tasks"]}
        assert set(by_task) == set(dataset["task_id"])
        assert all(t["steps"] == [0, 1] and t["stored"] for t in by_task.values())
        prompts = {row["task_id"]: json.dumps(row["prompt"]) for row in exported(export)}
        easy = {
            t
            for t, p in prompts.items()
            if "largest in the Alps" in p or ("freeze my credit card" in p and "debit" not in p)
        }
        assert {t for t, s in by_task.items() if s["tier"] == "too_easy"} == easy and len(easy) == 2
        assert {t for t, s in by_task.items() if s["tier"] == "learnable"} == set(prompts) - easy

        following = tmp_path / "next.jsonl"
        run_cli(
            "forge",
            "export",
            "--out",
            str(following),
            "--tier",
            "learnable",
            "--run",
            "forged-1",
            env=env,
            cwd=tmp_path,
        )
        kept = {row["task_id"] for row in exported(following)}
        assert kept == set(prompts) - easy and not kept & easy
        assert {row["tier"] for row in exported(following)} == {"learnable"}
    finally:
        server.kill()
