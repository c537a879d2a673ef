"""Samples per second of the local SmolLM2 judge: llama.cpp's llama-server with parallel slots
against the same server with one slot (one request at a time: the baseline), on one batch.

Each configuration starts its own server, scores a warm-up of 4 samples, then the batch (the
first ``--samples`` rows of data/sorh_dev.jsonl, pointwise, through the ``llm`` judge plugin and
``ModelClient`` as the service does), and reports samples/s and the mean seconds per sample.

    .venv/bin/python bench/local_judge.py                   # 24 samples; slots 1, 2, 4, 8
    (the first figure, 1 slot, is the baseline of the ratio printed last)
    .venv/bin/python bench/local_judge.py --samples 48 --parallel 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge_service_plugins.judges.llm import LLMJudge
from rich.console import Console
from rich.table import Table

from judge_service.contracts import JudgeContext
from judge_service.domain import Sample
from judge_service.judging.client import ModelClient
from judge_service.judging.local_build import machine_build
from judge_service.judging.local_model import LocalModelServer

DATA = Path(__file__).resolve().parents[1] / "data" / "sorh_dev.jsonl"


def load(n: int) -> list[Sample]:
    with DATA.open() as rows:
        return [
            Sample.model_validate({k: v for k, v in json.loads(line).items() if k != "label"})
            for line, _ in zip(rows, range(n), strict=False)
        ]


async def score(server: LocalModelServer, samples: list[Sample]) -> tuple[float, int]:
    """Seconds to score ``samples`` at the judge's own concurrency, and how many failed."""
    judge = LLMJudge(**server.judge_options(), client=ModelClient())

    async def one(sample: Sample) -> bool:
        try:
            await judge.score(sample, JudgeContext())
            return True
        except Exception:
            return False

    started = time.perf_counter()
    done = await asyncio.gather(*(one(s) for s in samples))
    return time.perf_counter() - started, done.count(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=24)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    machine_build().build_with_progress(report=print)  # once per machine
    every = load(args.samples + 4)
    warm, batch = every[:4], every[4:]
    slots = sorted({1, *args.parallel})  # 1 slot: the baseline
    configs = [(f"llama-server, {n} slot(s), continuous batching", {"parallel": n}) for n in slots]
    rates: list[float] = []
    table = Table("server", "samples", "seconds", "samples/s", "s per sample", "failed")
    for name, options in configs:
        server = LocalModelServer(**options)
        try:
            server.start()
            asyncio.run(score(server, warm))
            # a fresh cache (ModelClient) per run, and fresh samples: no cache hit
            seconds, failed = asyncio.run(score(server, batch))
        finally:
            server.stop()
        table.add_row(
            name, str(len(batch)), f"{seconds:.1f}", f"{len(batch) / seconds:.2f}",
            f"{seconds / len(batch):.2f}", str(failed),
        )  # fmt: skip
        print(f"{name}: {len(batch) / seconds:.2f} samples/s", flush=True)
        rates.append(len(batch) / seconds)
    Console().print(table)
    print(f"best / one slot: {max(rates) / rates[0]:.2f}x")


if __name__ == "__main__":
    main()
