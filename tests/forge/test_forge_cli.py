"""``judge-service forge`` from the command line, bad inputs refused by line and field with
nothing stored, and a forge job on a real Celery worker."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from judge_service.core.settings import get_settings
from tests.fakes import FakeOpenAIServer
from tests.forge_data import bot, trace, traces, user, write_jsonl
from tests.forge_support import JSONL, spec, wait_job
from tests.helpers import JUDGE_SERVICE, Server, Worker, create_key, run_cli, service_env


def fails(*args: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [JUDGE_SERVICE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    return done.stderr


def test_cli_forges_and_refuses_bad_files_naming_line_and_field(
    sqlite_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    env = service_env(JS_DATABASE_URL=sqlite_url, JS_MAX_BODY_MB="32")
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    good = write_jsonl(tmp_path / "good.jsonl", traces())
    miner = json.dumps(spec(fake, "miner"))
    job = json.loads(
        run_cli("forge", "traces", str(good), "--miner", miner, "--json", env=env, cwd=tmp_path)
    )
    assert job["counts"]["tasks"] == 4 and job["counts"]["failed_traces"] == 4
    everything = tmp_path / "all.jsonl"
    listed = run_cli(
        "forge", "export", "--out", str(everything), "--include-unapproved", env=env, cwd=tmp_path
    )
    assert listed.startswith("4 tasks")
    assert run_cli("forge", "export", "--out", str(everything), env=env, cwd=tmp_path).startswith(
        "0 tasks"
    )

    no_user = write_jsonl(  # every trace set aside: refused, naming the first
        tmp_path / "no_user.jsonl", [trace("a", bot("x")), trace("b", user("hi"))]
    )
    assert "line 1: the trace has no user turn with text (field `messages`)" in fails(
        "forge", "traces", str(no_user), env=env, cwd=tmp_path
    )
    not_json = tmp_path / "not_json.jsonl"
    not_json.write_text(json.dumps(trace("a", user("hi"))) + "\n{oops\n")
    assert "line 2: is not JSON" in fails("forge", "traces", str(not_json), env=env, cwd=tmp_path)
    big = tmp_path / "big.jsonl"
    with big.open("w") as handle:
        for n in range(50):
            handle.write(json.dumps(trace(f"t{n}", user("x" * 1_048_576))) + "\n")
    assert "over JS_MAX_BODY_MB" in fails("forge", "traces", str(big), env=env, cwd=tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Some text.")
    (docs / "b.md").write_text("   \n")
    assert "document b.md is empty" in fails("forge", "documents", str(docs), env=env, cwd=tmp_path)
    empty_line = write_jsonl(
        tmp_path / "docs.jsonl", [{"id": "a", "text": "x"}, {"id": "b", "text": ""}]
    )
    assert "line 2: `text` must be a non-empty string (field `text`)" in fails(
        "forge", "documents", str(empty_line), env=env, cwd=tmp_path
    )
    assert "--tier must be one of" in fails(
        "forge", "export", "--out", str(everything), "--tier", "easy", env=env, cwd=tmp_path
    )
    after = run_cli(
        "forge", "export", "--out", str(everything), "--include-unapproved", env=env, cwd=tmp_path
    )
    assert after.startswith("4 tasks")  # nothing stored changed


def test_forge_project_option_scopes_jobs_and_export(
    sqlite_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    """``--project`` makes the job in that project; ``export --project`` writes only its tasks
    (default: every project's); a bad name is a usage error naming the option, storing nothing."""
    env = service_env(JS_DATABASE_URL=sqlite_url)
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    good = write_jsonl(tmp_path / "good.jsonl", traces())
    miner = json.dumps(spec(fake, "miner"))
    run_cli("forge", "traces", str(good), "--miner", miner, env=env, cwd=tmp_path)
    job = json.loads(
        run_cli(
            "forge", "traces", str(good), "--miner", miner, "--project", "team-b", "--json",
            env=env, cwd=tmp_path,
        )
    )  # fmt: skip
    assert job["counts"]["tasks"] == 4

    def exported(*extra: str) -> list[dict]:
        out = tmp_path / "out.jsonl"
        run_cli("forge", "export", "--out", str(out), "--include-unapproved", *extra,
                env=env, cwd=tmp_path)  # fmt: skip
        return [json.loads(line) for line in out.read_text().splitlines()]

    team_b = exported("--project", "team-b")
    default = exported("--project", "default")
    assert len(team_b) == 4 and len(default) == 4
    assert not {r["task_id"] for r in team_b} & {r["task_id"] for r in default}
    assert len(exported()) == 8
    assert exported("--project", "nobody") == []
    assert "--project" in fails(
        "forge", "traces", str(good), "--project", "Not A Name", env=env, cwd=tmp_path
    )
    assert "--project" in fails(
        "forge", "export", "--out", str(tmp_path / "x.jsonl"), "--project", "Not A Name",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert not (tmp_path / "x.jsonl").exists()
    assert len(exported()) == 8  # the refused job stored nothing
    run = "in project 'team-b'"
    assert run in fails(
        "forge", "export", "--out", str(tmp_path / "y.jsonl"), "--run", "no-such-run",
        "--project", "team-b", env=env, cwd=tmp_path,
    )  # fmt: skip


def test_a_forge_job_runs_on_a_celery_worker(
    postgres_url: str, redis_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    url = get_settings(database_url=postgres_url).database_url
    # the fake server is named by api_base: free endpoints, as for local use
    env = service_env(JS_DATABASE_URL=url, JS_BROKER_URL=redis_url, JS_ALLOW_FREE_ENDPOINTS="true")
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    reviewer = {"Authorization": f"Bearer {create_key('reviewer', env=env, cwd=tmp_path)}"}
    worker = Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log")
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            body = "".join(json.dumps(t) + "\n" for t in traces())
            queued = http.post(
                "/v1/forge/traces",
                content=body,
                params={"miner": json.dumps(spec(fake, "miner"))},
                headers={**reviewer, **JSONL},
            )
            assert queued.status_code == 202, queued.text
            job = wait_job(http, reviewer, queued.json()["id"], timeout=120)
            assert job["status"] == "done", (job, worker.log())
            assert job["counts"]["tasks"] == 4 and job["counts"]["duplicates_merged"] == 4
            assert "judge_service.forge" in worker.log()
    finally:
        server.kill()
        worker.kill()


def test_forge_traces_prints_the_tasks_goal_lines_and_end_states_as_a_table(
    sqlite_url: str, tmp_path: Path, fake: FakeOpenAIServer
):
    env = service_env(JS_DATABASE_URL=sqlite_url)
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    retail = Path(__file__).resolve().parents[2] / "data" / "retail" / "traces.jsonl"
    rows = [line for line in retail.read_text().splitlines() if '"retail-0000-' in line]
    assert len(rows) == 3
    sample = tmp_path / "retail.jsonl"
    sample.write_text("\n".join(rows) + "\n")
    miner = json.dumps(spec(fake, "miner"))
    # the fake model's goal line ("Looks correct and complete.") is about nothing the user said
    out = run_cli("forge", "traces", str(sample), "--miner", miner, env=env, cwd=tmp_path)
    assert "3 traces, 1 tasks in 1 families, 1 with a reference end state" in out
    assert "return delivered order items" in out  # the family, named by its write
    assert "order_id=#W6067464 (status=return requested)" in out  # the end state
    assert "consensus" in out and "kettle" in out.lower()  # its source, the goal line
    assert "writes: " in out and "return_delivered_order_items" in out
    assert "failure signs vs 3 labels (0 failed): 0 traces flagged" in out
