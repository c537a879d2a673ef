"""How fast the local judge scores: a small batch against the embedded service, no `judges`.

    .venv/bin/python bench/local_judge_service.py [--samples 10] [--timeout-s 900]

Starts ``judge-service serve`` embedded (SQLite, in-process executor, the local
SmolLM2-135M judge on llama.cpp), as the README's first command does, and sends
requests without ``judges``, so the local judge scores them. First one sample starts
the model server (the cold start). Then, for two kinds of sample (short question and
answer pairs, and the dev split's code rollouts from ``data/sorh_dev.jsonl``): one
sample alone (the baseline, one judge call, measured in the same run) and a batch of
``--samples`` others (distinct, so no cache hit). It prints samples/s, the batch's
time as a multiple of the one call (near the sample count: the calls queue one behind
the other), and the llama.cpp server's CPU seconds per sample (Linux), which tells a
busy machine's figures from an idle one's: on a shared machine wall time is mostly
waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from rich.console import Console
from rich.table import Table

from bench.common import ROOT, service_env, start_service

DEV_SPLIT = ROOT / "data" / "sorh_dev.jsonl"


def qa_samples(first: int, count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"qa{i}", "prompt": f"What is {i} + {i}?", "completion": f"The answer is {2 * i}."}
        for i in range(first, first + count)
    ]


def code_samples(first: int, count: int) -> list[dict[str, Any]]:
    lines = DEV_SPLIT.read_text(encoding="utf-8").splitlines()[first : first + count]
    rows = [json.loads(line) for line in lines]
    return [{k: row[k] for k in ("id", "prompt", "completion")} for row in rows]


def llama_cpu_s(root: int) -> float | None:
    """CPU seconds (user + system) used so far by the llama.cpp server under ``root``."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    parents: dict[int, int] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    total = 0.0
    for pid, parent in parents.items():
        while parent not in (0, 1, root):
            parent = parents.get(parent, 0)
        try:
            if parent != root or b"llama-server-" not in (proc / str(pid) / "cmdline").read_bytes():
                continue
            fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def post(url: str, key: str, samples: list[dict], timeout_s: float) -> tuple[float, dict]:
    """Seconds for one waiting request, and its answer."""
    started = time.perf_counter()
    response = httpx.post(
        f"{url}/v1/rewards",
        headers={"Authorization": f"Bearer {key}"},
        json={"samples": samples, "timeout_s": timeout_s},
        timeout=timeout_s + 60,
    )
    seconds = time.perf_counter() - started
    response.raise_for_status()
    return seconds, response.json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--timeout-s", type=float, default=900)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as folder:
        env = service_env(JS_DATABASE_URL=f"sqlite:///{folder}/bench.db")
        child, url, key = start_service(env)
        try:
            cold, _ = post(url, key, qa_samples(1000, 1), args.timeout_s)
            console.print(f"first request, llama.cpp server start included: {cold:.1f} s")
            table = Table(
                "samples", "one call s", "batch s", "samples/s", "x one call", "tokens/sample",
                "masked", "model CPU s/sample",
            )  # fmt: skip
            for kind, make in (("QA", qa_samples), ("code", code_samples)):
                one, _ = post(url, key, make(0, 1), args.timeout_s)
                cpu_before = llama_cpu_s(child.proc.pid)
                batch, answer = post(url, key, make(1, args.samples), args.timeout_s)
                cpu_after = llama_cpu_s(child.proc.pid)
                cpu = "-"
                if cpu_before is not None and cpu_after is not None:
                    cpu = f"{(cpu_after - cpu_before) / args.samples:.1f}"
                usage = answer["usage"]
                tokens = (usage["prompt_tokens"] + usage["completion_tokens"]) / args.samples
                masked = sum(not r["valid"] for r in answer["results"])
                table.add_row(
                    f"{args.samples} {kind}",
                    f"{one:.1f}",
                    f"{batch:.1f}",
                    f"{args.samples / batch:.2f}",
                    f"{batch / one:.1f}",
                    f"{tokens:.0f}",
                    str(masked),
                    cpu,
                )
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            table.title = f"local judge: {os.cpu_count()} CPUs, load average {load}"
            console.print(table)
        finally:
            child.stop()


if __name__ == "__main__":
    main()
