"""Where the whole service's CPU goes (API and executor threads), sampled by py-spy.

``judge-service serve`` embedded (SQLite, in-process executor) scores one batch of fresh
samples (``--samples``, one ``openai/`` judge each by default, ``--panel 3`` for three) on the
OpenAI-compatible fake with 50 ms latency, after a warm-up batch. It prints the service's CPU per
judge call (user+sys of the process, all threads, from psutil), then samples the same batch
again with ``py-spy record --gil`` (only the thread holding the GIL: Python's real CPU) and
prints the share of samples per thread and the functions that cost most, inclusive.

    .venv/bin/python bench/profile_service.py [--samples 1024] [--panel 1] [--top 60]
        [--raw profile.txt]

cProfile (``bench/profile_batch.py``) sees only the worker's task; this sees the API's request
parsing, storage, read-back and answer too, at a sampler's small overhead.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil

from bench.common import BIN, fake_judge_server, service_env, start_service
from bench.judge_calls import batch_bodies, open_clients, post_batches

_FRAME = re.compile(r" \((?:.*/)?([^/:]+):\d+\)")


def summarise(raw: Path, top: int) -> None:
    """Per-thread shares and inclusive shares per function of py-spy's raw (collapsed) output."""
    threads: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        total += n
        threads[re.sub(r" ?\(\d+\)", "", frames[0])] += n
        for frame in {_FRAME.sub(r" (\1)", f) for f in frames[1:]}:
            inclusive[frame] += n
    print(f"{total} samples with the GIL held")
    for thread, n in threads.most_common():
        print(f"{100 * n / total:5.1f}%  {thread}")
    print("inclusive, by function:")
    for frame, n in inclusive.most_common(top):
        print(f"{100 * n / total:5.1f}%  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--panel", type=int, default=1, help="LLM judges per sample")
    parser.add_argument("--top", type=int, default=60)
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw output here")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    args = parser.parse_args()
    fake, api_base = fake_judge_server(50)
    home = Path(tempfile.gettempdir()) / f"js-profile-service-{uuid.uuid4().hex[:6]}"
    home.mkdir()
    env = service_env(JS_DATABASE_URL=f"sqlite:///{home / 'service.db'}", JS_DETECTORS="none")
    judges = [
        {"name": f"openai/profile-judge-{j}", "api_base": api_base} for j in range(args.panel)
    ]
    raw = args.raw or home / "py-spy.txt"
    server = None
    try:
        server, url, key = start_service(env)
        process = psutil.Process(server.proc.pid)

        def cpu() -> float:
            times = process.cpu_times()
            return times.user + times.system

        clients = open_clients(url, key, 1)
        post_batches(clients, batch_bodies(judges, 64, 1))  # warm-up: imports, connections
        bodies = batch_bodies(judges, args.samples, 1)
        before, started = cpu(), time.perf_counter()
        calls = post_batches(clients, bodies)
        wall, spent = time.perf_counter() - started, cpu() - before
        print(
            f"{calls} judge calls in {wall:.2f} s ({calls / wall:.0f} calls/s); service CPU "
            f"{spent:.2f} s = {1000 * spent / calls:.2f} ms per judge call (no profiler)"
        )
        spy = subprocess.Popen(
            [str(BIN / "py-spy"), "record", "--pid", str(server.proc.pid), "--gil",
             "--nonblocking", "--format", "raw", "--rate", str(args.rate), "--output", str(raw)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1.0)  # py-spy attached
        post_batches(clients, batch_bodies(judges, args.samples, 1))
        spy.send_signal(2)  # SIGINT: py-spy writes its output and exits
        spy.wait(timeout=60)
        for client in clients:
            client.close()
    finally:
        if server is not None:
            server.stop()
        fake.stop()
    summarise(raw, args.top)


if __name__ == "__main__":
    main()
