#!/usr/bin/env bash
# Lint and run the whole suite on real PostgreSQL, SQLite, Redis, Celery workers and the
# local model. Starts the services it needs; each test makes its own database.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
