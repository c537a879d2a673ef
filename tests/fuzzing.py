"""Fuzzing a running service with schemathesis from its own ``/openapi.json``, with a key.

Shared by ``tests/service/test_fuzz_api.py`` (a short run) and ``bench/fuzz_api.py`` (a long one).
Requests and answers are read back from schemathesis' HAR report, so the counts are
those of requests that really went out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"

#: What the fuzzed service runs with: a judge that calls no model, batches that end in
#: 2 s whatever ``timeout_s`` a request asks, and a local model that is never started
#: (its URL answers nothing), so no fuzzed request can start llama.cpp.
FUZZ_ENV = {
    "JS_DEFAULT_JUDGES": "reference_match",
    "JS_MAX_TIMEOUT_S": "2",
    "JS_DEFAULT_TIMEOUT_S": "2",
    "JS_LOCAL_MODEL_URL": "http://127.0.0.1:9/v1",
}


@dataclass
class FuzzRun:
    """What one schemathesis run sent and got."""

    command: list[str]
    seconds: float
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)  # "METHOD URL -> status"
    output: str = ""

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())

    def summary(self) -> str:
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        return (
            f"schemathesis: {self.requests} requests, {len(self.server_errors)} 5xx, "
            f"in {self.seconds:.0f} s ({codes})"
        )


def fuzz(url: str, key: str, *, max_time_s: int, workdir: Path, seed: int = 1) -> FuzzRun:
    """Run schemathesis (every phase, ``not_a_server_error`` check) against ``url`` for
    ``max_time_s`` seconds; fuzzing and stateful phases repeat until the time is spent."""
    har = workdir / "schemathesis.har.json"
    command = [
        str(SCHEMATHESIS),
        "run",
        f"{url}/openapi.json",
        "--header",
        f"Authorization: Bearer {key}",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        "50",
        "--max-time",
        str(max_time_s),
        "--seed",
        str(seed),
        "--generation-database",
        "none",
        "--request-timeout",
        "30",
        "--workers",
        "1",
        "--report",
        "har",
        "--report-har-path",
        str(har),
        "--no-color",
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
        "PYTHONPATH": str(ROOT),
    }
    start = time.monotonic()
    done = subprocess.run(
        command,
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=max_time_s + 300,
        check=False,
    )
    run = FuzzRun(
        command=[
            c if not c.startswith("Authorization") else "Authorization: Bearer …" for c in command
        ],
        seconds=time.monotonic() - start,
        output=(done.stdout + done.stderr)[-6000:],
    )
    assert har.exists(), f"schemathesis wrote no report:\n{run.output}"
    for entry in json.loads(har.read_text())["log"]["entries"]:
        status = int(entry["response"]["status"])
        run.statuses[status] += 1
        if status >= 500:
            request = entry["request"]
            run.server_errors.append(f"{request['method']} {request['url']} -> {status}")
    return run
