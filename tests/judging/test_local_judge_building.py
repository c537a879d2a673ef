"""A fresh machine: ``serve`` answers while the local judge's llama-server is still building.

A real ``judge-service serve`` (embedded, SQLite) starts with a user cache
(``XDG_CACHE_HOME``) whose llama-server is being built by another process: this test holds
the build's lock and writes its stage, as a builder does (``local_build``). The service
answers at once: ``/readyz`` is ready and names the build's stage, a deterministic batch is
scored, and a batch for the local judge gets 503 ``local_judge_starting`` with a
``Retry-After``. Once the build is done (the machine's real binary and model put in place, the lock
released), the same batch is scored by the real SmolLM2.
"""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import httpx

from judge_service.judging.local_build import LlamaServerBuild, machine_build
from tests.helpers import Server, create_key, run_cli, service_env, wait_until


def test_serve_answers_while_the_local_judge_builds_then_scores_with_it(tmp_path: Path):
    real = machine_build()
    assert real.ready(), "scripts/setup.sh all builds llama-server before the tests"
    cache = tmp_path / "cache"
    fresh = LlamaServerBuild(cache=cache / "judge-service")
    fresh.binary.parent.mkdir(parents=True)
    lock_path = fresh.binary.with_name(fresh.binary.name + ".lock")
    status_path = fresh.binary.with_name(fresh.binary.name + ".status.json")
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{tmp_path / 'fresh.db'}",
        JS_DETECTORS="none",
        XDG_CACHE_HOME=str(cache),
    )
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    headers = {"Authorization": f"Bearer {create_key('trainer', env=env, cwd=tmp_path)}"}
    sample = {"id": "s1", "prompt": "What is 6*7?", "completion": "42", "reference": "42"}
    local = {"samples": [sample], "judges": ["local/smollm2-135m"], "timeout_s": 300}
    server: Server | None = None
    try:
        with lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            status = {"started_at": time.time() - 75, "stage": "compiling 40%", "pid": 1}
            status_path.write_text(json.dumps(status))
            server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
            _while_building(server, headers, local, tmp_path / "fresh.db")
            # the build ends: the model and the binary appear, the lock is released
            fresh.model_path.parent.mkdir(parents=True)
            shutil.copy2(real.model_path, fresh.model_path)
            shutil.copy2(real.binary, fresh.binary)
            status_path.unlink()
        assert wait_until(
            lambda: httpx.get(f"{server.url}/readyz").json()["local_judge"] == "ready", 10
        )
        url = f"{server.url}/v1/rewards"
        answer = httpx.post(url, headers=headers, json=local, timeout=320)
        assert answer.status_code == 200, answer.text
        (result,) = answer.json()["results"]
        assert result["valid"] is True and 0.0 <= result["reward"] <= 1.0, result
        assert "Traceback" not in server.log()
    finally:
        if server is not None:
            server.kill()


def _while_building(server: Server, headers: dict, local: dict, db: Path) -> None:
    """What the service answers while another process builds llama-server."""
    ready = httpx.get(f"{server.url}/readyz", timeout=10)
    assert ready.status_code == 200, ready.text
    said = ready.json()["local_judge"]
    assert re.fullmatch(r"building \(compiling 40%, \dm\d\ds elapsed\)", said), said

    scored = httpx.post(
        f"{server.url}/v1/rewards",
        headers=headers,
        json={**local, "judges": ["reference_match"]},
        timeout=60,
    )
    assert scored.status_code == 200, scored.text
    assert scored.json()["results"][0]["reward"] == 1.0

    refused = httpx.post(f"{server.url}/v1/rewards", headers=headers, json=local)
    assert refused.status_code == 503, refused.text
    error = refused.json()["error"]
    assert error["code"] == "local_judge_starting", error
    assert "compiling 40%" in error["message"]
    assert error["detail"]["local_judge"]["status"] == "building"
    assert 10 <= int(refused.headers["retry-after"]) <= 60
    with sqlite3.connect(db) as connection:  # nothing was stored for the refused batch
        assert connection.execute("SELECT count(*) FROM batches").fetchone() == (1,)
