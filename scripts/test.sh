#!/usr/bin/env bash
# Lint and run the whole suite on real PostgreSQL, SQLite, Redis, Celery workers and the
# local model. Starts the services it needs; each test makes its own database.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# Types: the whole service is checked (pyproject's [tool.mypy]) but forge/ and traces/, not
# typed yet: the rest reads their types, their own errors are not reported.
.venv/bin/python -m mypy judge_service --exclude '^judge_service/(forge|traces)/'
# pytest's folders go to the user cache, not the system's temporary folder (the suite's own
# temporary files go under them: tests/conftest.py sets TMPDIR).
test_tmp="${XDG_CACHE_HOME:-$HOME/.cache}/judge-service/test-tmp"
mkdir -p "$(dirname "$test_tmp")"
# Two pytest-xdist workers (JS_TEST_WORKERS): most tests wait on the servers and workers they
# start, so a second worker fills the other core. A file's tests stay together on one worker
# (--dist loadfile), so a module's shared server starts once; files go out in the order
# tests/conftest.py gives them, the slowest first (--no-loadscope-reorder).
.venv/bin/python -m pytest -q -p no:cacheprovider --basetemp="$test_tmp" \
  -n "${JS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
