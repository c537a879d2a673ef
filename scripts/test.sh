#!/usr/bin/env bash
# Lint and run the whole suite on real PostgreSQL, SQLite, Redis, Celery workers and the
# local model. Starts the services it needs; each test makes its own database.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# pytest's folders go to the user cache, not the system's temporary folder (the suite's own
# temporary files go under them: tests/conftest.py sets TMPDIR).
test_tmp="${XDG_CACHE_HOME:-$HOME/.cache}/judge-service/test-tmp"
mkdir -p "$(dirname "$test_tmp")"
.venv/bin/python -m pytest -q -p no:cacheprovider --basetemp="$test_tmp" "$@"
