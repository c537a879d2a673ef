"""A long schemathesis run over the API, with an admin key: requests sent, and how many 5xx.

The same run as ``tests/service/test_fuzz_api.py`` (real ``judge-service serve``, embedded on
SQLite, a judge that calls no model), for longer: fuzzing and stateful phases repeat
until the time is spent. Prints the count of requests by status and every 5xx.

    .venv/bin/python bench/fuzz_api.py                  # 300 s
    .venv/bin/python bench/fuzz_api.py --seconds 600 --seed 7
    .venv/bin/python bench/fuzz_api.py --postgres       # on a fresh PostgreSQL database

PostgreSQL refuses what SQLite stores (NUL in text, integers past 32 bits), so a run on each
finds different 5xx.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.judge_overhead import pg_database
from tests.fuzzing import FUZZ_ENV, fuzz
from tests.helpers import Server, create_key, run_cli, service_env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--postgres", action="store_true", help="a new database on 127.0.0.1:5432, not SQLite"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fuzz-api-") as folder:
        work = Path(folder)
        url = pg_database() if args.postgres else f"sqlite:///{work / 'fuzz.db'}"
        env = service_env(JS_DATABASE_URL=url, **FUZZ_ENV)
        run_cli("db", "upgrade", env=env, cwd=work)
        key = create_key("admin", env=env, cwd=work)
        server = Server(env=env, cwd=work, log=work / "serve.log", timeout=180)
        try:
            run = fuzz(server.url, key, max_time_s=args.seconds, workdir=work, seed=args.seed)
        finally:
            server.kill()
    print(" ".join(run.command))
    print(run.summary())
    for line in run.server_errors:
        print("  5xx:", line)
    return 1 if run.server_errors else 0


if __name__ == "__main__":
    sys.exit(main())
