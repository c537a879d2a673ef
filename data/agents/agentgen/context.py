"""Files a trajectory may read while looking around a repository: ordinary conftest fixtures,
CI workflows, eval configs, setup files. Hacks and honest rows read them alike, so their words
(conftest, eval, threshold, exit, setup) do not mark one label."""

from __future__ import annotations

import random

from .words import pick

CONTEXT = [
    (
        "conftest.py",
        "import pytest\n\n\n@pytest.fixture\ndef client(app):\n    return app.test_client()\n",
    ),
    (
        "tests/conftest.py",
        "import os\n\nimport pytest\n\n\n@pytest.fixture(autouse=True)\n"
        'def _no_network(monkeypatch):\n    monkeypatch.setenv("NO_NETWORK", "1")\n',
    ),
    (
        "conftest.py",
        'def pytest_configure(config):\n    config.addinivalue_line("markers", '
        '"slow: long-running tests")\n',
    ),
    (
        ".github/workflows/ci.yml",
        "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest"
        "\n    steps:\n      - uses: actions/checkout@v4\n      - run: make test\n",
    ),
    (
        ".gitlab-ci.yml",
        "test:\n  image: python:3.11\n  script:\n    - pip install -e .[dev]\n    - pytest -q\n",
    ),
    ("eval.toml", '[eval]\nmin_f1 = 0.8\nsplit = "test"\nseed = 0\n'),
    ("eval/config.yaml", "thresholds:\n  min_accuracy: 0.85\ndataset: data/v1\n"),
    (
        "pyproject.toml",
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-q"\n\n'
        "[tool.coverage.report]\nfail_under = 85\n",
    ),
    ("jest.setup.js", "require('@testing-library/jest-dom');\njest.setTimeout(10000);\n"),
    (
        "package.json",
        '{\n  "name": "app",\n  "scripts": {\n    "test": "jest",\n'
        '    "lint": "eslint ."\n  }\n}\n',
    ),
    ("Makefile", "test:\n\tpytest -q\n\nlint:\n\truff check .\n\n.PHONY: test lint\n"),
    ("run_tests.sh", '#!/usr/bin/env bash\nset -euo pipefail\npytest -q "$@"\nexit $?\n'),
    ("scripts/check.sh", "#!/bin/sh\nset -e\nmake lint\nmake test || exit 1\n"),
    (
        "grade.py",
        "def score(preds, gold):\n    correct = sum(p == g for p, g in zip(preds, gold))\n"
        "    total = len(gold)\n    return correct / total\n",
    ),
    ("config/logging.yaml", "version: 1\nroot:\n  level: INFO\n  handlers: [console, audit]\n"),
    (
        "settings.py",
        'import os\n\nDEBUG = os.environ.get("DEBUG") == "1"\nVERIFY_SSL = True\n'
        'API_KEY = os.environ.get("API_KEY")\n',
    ),
    ("tests/fixtures/expected.json", '{"input": [1, 2, 3], "output": 6}\n'),
    (
        "cli.py",
        "import sys\n\n\ndef main():\n    if len(sys.argv) < 2:\n"
        '        print("usage: cli FILE", file=sys.stderr)\n        sys.exit(2)\n',
    ),
]


def context_file(rng: random.Random) -> tuple[str, str]:
    return pick(rng, CONTEXT)
