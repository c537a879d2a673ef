#!/usr/bin/env bash
# Write constraints.txt: the exact version of every package in .venv, which
# scripts/setup.sh then installs (pip's -c), so a fresh clone gets what CI last passed
# with, not whatever was released since. Run after `bash scripts/setup.sh all` when a
# dependency in pyproject.toml changes, then run the tests and commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo "# Written by scripts/lock.sh from a venv made by 'bash scripts/setup.sh all'; do not edit."
  .venv/bin/python -m pip freeze --exclude-editable 2>/dev/null |
    # llama.cpp is installed from a wheel built on this machine (a file URL), torch from
    # the CPU build on this disk (a local +cpu label): both are pinned by version only.
    sed -E 's/^(llama[-_]cpp[-_]python) @ .*\/llama_cpp_python-([0-9.]+)-.*$/\1==\2/; s/^(torch==[^+]+)\+.*$/\1/' |
    LC_ALL=C sort -f
} > constraints.txt
echo "constraints.txt: $(grep -c '==' constraints.txt) packages pinned"
