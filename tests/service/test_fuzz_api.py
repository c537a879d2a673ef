"""A schemathesis run over ``/openapi.json`` with an admin key against a real ``serve``
(embedded, SQLite, a judge that calls no model): no request may get a 5xx.

About 90 s of fuzzing; ``bench/fuzz_api.py`` runs the same for longer.
"""

from __future__ import annotations

from pathlib import Path

from tests.fuzzing import FUZZ_ENV, fuzz
from tests.helpers import Server, create_key, run_cli, service_env

FUZZ_SECONDS = 90
#: Fewer would mean schemathesis stopped early, not that the service is sound.
MIN_REQUESTS = 400


def test_schemathesis_gets_no_5xx(tmp_path: Path) -> None:
    env = service_env(JS_DATABASE_URL=f"sqlite:///{tmp_path / 'fuzz.db'}", **FUZZ_ENV)
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    key = create_key("admin", env=env, cwd=tmp_path)
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log", timeout=180)
    try:
        run = fuzz(server.url, key, max_time_s=FUZZ_SECONDS, workdir=tmp_path)
    finally:
        server.kill()
    print(run.summary())
    assert run.server_errors == [], "\n".join(run.server_errors[:20]) + "\n" + server.log()
    assert run.requests >= MIN_REQUESTS, run.output
    assert run.statuses[422] > 0 and run.statuses[200] > 0  # both rejected and served
