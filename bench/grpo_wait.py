"""How long a GRPO trainer waits for the rewards of one step, against the latency bound.

Each step is 256 completions (64 prompts x 4), scored through the TRL adapter
(``trainer_bridge.trl.reward_function``, as GRPOTrainer calls it: from one event loop
on a background thread) against ``judge-service serve`` (embedded: SQLite, the
in-process executor). The panel is three LLM judges (``openai/grpo-judge-a|b|c``)
on the OpenAI-compatible fake with 50 ms latency, so a step makes 768 judge calls.

The bound is what the latency alone allows: calls / concurrency x 50 ms, where the
concurrency is the service's in-flight limit in all (``JS_JUDGE_CONCURRENCY`` per model, times
three models). The goal is a step wait of at most 1.3x the bound. No client reaches the bound
itself: 256 calls per model through 21 slots take 13 rounds of 50 ms (the bound counts 12.2),
and the fake answers each round's calls one by one. So each row comes with its floor, measured
in the same run on the same fake: bare ``aiohttp`` POSTs from this process making the same
calls with the same limits (768 a step, 21 or 64 in flight per model), and the service's
wait as a multiple of the floor's. Two rows, in one run:

- 64 in flight in all (21 per model: 63), as ``bench/judge_calls.py`` runs its rows. The bound
  is ~0.61 s, and the service's CPU per step (~0.3 s) hides under the latency: this row
  measures what the issue asks, the service's overhead on top of the judges' latency.
- 64 in flight per model (192 in all). The bound drops to 0.2 s, below the service's CPU per
  step, so this row is CPU-bound by construction: it shows where one process tops out.

    .venv/bin/python bench/grpo_wait.py [--steps 10] [--audit] [--concurrency 64]

Without ``--audit`` the service runs the judges only (``JS_DETECTORS=none``); with it,
also the default detectors. Figures in the README.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at run time

import aiohttp
import pydantic_core
from rich.console import Console
from rich.table import Table

from bench.common import fake_judge_server, service_env, start_service
from bench.judge_calls import FORMAT
from trainer_bridge.trl import reward_function

LATENCY_S = 0.05
PROMPTS, GENERATIONS = 64, 4
MODELS = ("openai/grpo-judge-a", "openai/grpo-judge-b", "openai/grpo-judge-c")


class State:
    def __init__(self, step: int) -> None:
        self.global_step = step


class TrainerLoop:
    """An event loop on its own thread, as GRPOTrainer runs async reward functions
    (``asyncio.run_coroutine_threadsafe(..., self.async_loop)``, the same loop every step)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


def step_wait(reward, step: int, trainer: TrainerLoop) -> float:
    """Seconds the trainer waits for one step's rewards (fresh texts: no cache hits)."""
    run = uuid.uuid4().hex
    prompts = [
        f"Task {p} of {run}: summarise the report."
        for p in range(PROMPTS)
        for _ in range(GENERATIONS)
    ]
    completions = [f"Summary {i} ({run})." for i in range(len(prompts))]
    started = time.perf_counter()
    rewards = trainer.run(
        reward(prompts=prompts, completions=completions, trainer_state=State(step))
    )
    elapsed = time.perf_counter() - started
    assert len(rewards) == PROMPTS * GENERATIONS and all(r is not None for r in rewards)
    return elapsed


def cpu_seconds(pid: int) -> float:
    """User plus system CPU of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bare_step(session: aiohttp.ClientSession, api_base: str, per_model: int) -> float:
    """Seconds for one step's judge calls as bare POSTs: 256 per model, ``per_model`` in
    flight per model, each reply's JSON read (the same body shape as bench/judge_calls.py)."""
    run, url = uuid.uuid4().hex, f"{api_base}/chat/completions"
    headers = {"Authorization": "Bearer sk", "Content-Type": "application/json"}
    limits = {model: asyncio.Semaphore(per_model) for model in MODELS}

    async def one(i: int, model: str) -> str:
        async with limits[model]:
            text = f"Grade summary {i} of run {run}."
            body = {
                "model": model.partition("/")[2],
                "messages": [{"role": "user", "content": text}],
                "response_format": FORMAT,
            }
            async with session.post(url, data=pydantic_core.to_json(body), headers=headers) as r:
                return pydantic_core.from_json(await r.read())["choices"][0]["message"]["content"]

    started = time.perf_counter()
    await asyncio.gather(*(one(i, m) for i in range(PROMPTS * GENERATIONS) for m in MODELS))
    return time.perf_counter() - started


def floor_waits(api_base: str, per_model: int, steps: int) -> tuple[list[float], float]:
    """The floor's step waits (after a warm-up step) and this process's CPU per step."""

    async def run() -> tuple[list[float], float]:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        try:
            await bare_step(session, api_base, per_model)  # connections
            cpu = time.process_time()
            waits = [await bare_step(session, api_base, per_model) for _ in range(steps)]
            return waits, (time.process_time() - cpu) / steps
        finally:
            await session.close()

    return asyncio.run(run())


def measure(
    per_model: int, steps: int, audit: bool, api_base: str, fake_pid: int
) -> tuple[list[str], list[str]]:
    """Two table rows, the floor's and the service's: the step waits of ``steps`` steps with
    ``per_model`` calls in flight per judge model (the service: a fresh embedded one)."""
    tmp = Path("/tmp") / f"js-grpo-{uuid.uuid4().hex[:6]}"
    tmp.mkdir()
    detectors = {} if audit else {"JS_DETECTORS": "none"}
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{tmp / 'grpo.db'}",
        JS_JUDGE_CONCURRENCY=str(per_model),
        **detectors,
    )
    server, url, key = start_service(env)
    judges = [{"name": model, "api_base": api_base, "api_key": "sk"} for model in MODELS]
    calls = PROMPTS * GENERATIONS * len(judges)
    in_flight = per_model * len(judges)
    bound = calls / in_flight * LATENCY_S
    trainer = TrainerLoop()
    try:
        reward = reward_function(url, api_key=key, judges=judges, run_id="grpo-bench")
        step_wait(reward, 0, trainer)  # warm-up
        cpu_before, fake_before = cpu_seconds(server.proc.pid), cpu_seconds(fake_pid)
        waits = [step_wait(reward, step, trainer) for step in range(1, steps + 1)]
        service_cpu = (cpu_seconds(server.proc.pid) - cpu_before) / steps
        fake_cpu = (cpu_seconds(fake_pid) - fake_before) / steps
    finally:
        trainer.close()
        server.stop()
    fake_before = cpu_seconds(fake_pid)
    floor, floor_cpu = floor_waits(api_base, per_model, steps)
    floor_fake_cpu = (cpu_seconds(fake_pid) - fake_before) / steps
    floor_wait = statistics.median(floor)

    def row(name: str, waits: list[float], cpu: float, fake: float, versus: str) -> list[str]:
        wait = statistics.median(waits)
        return [
            name,
            f"{in_flight} ({per_model} per model)",
            f"{bound:.3f}",
            f"{wait:.3f} ({min(waits):.3f}-{max(waits):.3f})",
            f"{wait / bound:.2f}x",
            versus,
            f"{cpu:.3f}",
            f"{cpu / calls * 1000:.2f}",
            f"{fake:.3f}",
        ]

    return (
        row("bare aiohttp (the floor)", floor, floor_cpu, floor_fake_cpu, "1.00x"),
        row(
            "service (TRL adapter)",
            waits,
            service_cpu,
            fake_cpu,
            f"{statistics.median(waits) / floor_wait:.2f}x",
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--audit", action="store_true", help="the default detectors too")
    parser.add_argument(
        "--concurrency", type=int, default=64, help="calls in flight in all (the first row)"
    )
    args = parser.parse_args()
    fake, api_base = fake_judge_server(int(LATENCY_S * 1000))
    try:
        rows = [
            row
            for per_model in (args.concurrency // len(MODELS), args.concurrency)
            for row in measure(per_model, args.steps, args.audit, api_base, fake.proc.pid)
        ]
    finally:
        fake.stop()
    table = Table(
        "who waits",
        "in flight",
        "bound s",
        "step wait s (median)",
        "wait / bound (goal <= 1.3x)",
        "wait / floor",
        "CPU per step s",
        "CPU ms per call",
        "fake server CPU per step s",
        title=f"768 judge calls a step (3 LLM judges) on the 50 ms fake"
        f"{', default audit' if args.audit else ''}",
    )
    for row in rows:
        table.add_row(*row)
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
