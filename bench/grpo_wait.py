"""How long a GRPO trainer waits for the rewards of one step, against the latency bound.

Each step is 256 completions (64 prompts x 4), scored through the TRL adapter
(``trainer_bridge.trl.reward_function``, as GRPOTrainer calls it: from one event loop
on a background thread) against ``judge-service serve`` (embedded: SQLite, the
in-process executor). The panel is three LLM judges (``openai/grpo-judge-a|b|c``)
on the OpenAI-compatible fake with 50 ms latency, so a step makes 768 judge calls.

The bound is what the latency alone allows: calls / concurrency x 50 ms, where the
concurrency is the service's in-flight limit in all. The goal is a step wait of at most 1.3x
the bound. Each row comes with its floor, measured in the same run on the same fake: bare
``aiohttp`` POSTs from this process making the same calls with the same limits (768 a step),
taking turns with the service step by step, and the service's wait as a multiple of the
floor's. Three settings, in one run:

- 64 in flight per judge server, shared by the three models (``JS_ENDPOINT_CONCURRENCY=64``, as
  a panel served by one vLLM server would be run): the bound is 0.6 s, 12 full rounds of 50 ms.
  The service's CPU per step (~0.35 s) hides under the latency: this row and the next measure
  what the issue asks, the service's overhead on top of the judges' latency.
- 21 in flight per model (``JS_JUDGE_CONCURRENCY=21``, 63 in all), as ``bench/judge_calls.py``
  splits 64. The bound counts 12.2 rounds, though 256 calls per model through 21 slots take 13.

  Neither floor is near its bound: the fake answers each round's calls one by one on a core
  it shares with the caller, so a round takes ~60 ms, not 50.
- 64 in flight per model (192 in all). The bound drops to 0.2 s, below the service's CPU per
  step, so this row is CPU-bound by construction: it shows where one process tops out.

    .venv/bin/python bench/grpo_wait.py [--steps 10] [--audit] [--concurrency 64]

Without ``--audit`` the service runs the judges only (``JS_DETECTORS=none``); with it,
also the default detectors. Figures in the README.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import NamedTuple

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


class Limits(NamedTuple):
    """In-flight limits: per judge model, and per judge server (0: none)."""

    per_model: int
    per_server: int = 0

    @property
    def in_flight(self) -> int:
        every_model = self.per_model * len(MODELS)
        return min(every_model, self.per_server) if self.per_server else every_model

    def describe(self) -> str:
        if self.per_server:
            return f"{self.in_flight} (per server)"
        return f"{self.in_flight} ({self.per_model} per model)"


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


async def bare_step(session: aiohttp.ClientSession, api_base: str, limits: Limits) -> float:
    """Seconds for one step's judge calls as bare POSTs: 256 per model, within ``limits``
    (the model's slot taken first, then the server's, as the service does), each reply's
    JSON read (the same body shape as bench/judge_calls.py)."""
    run, url = uuid.uuid4().hex, f"{api_base}/chat/completions"
    headers = {"Authorization": "Bearer sk", "Content-Type": "application/json"}
    per_model = {model: asyncio.Semaphore(limits.per_model) for model in MODELS}
    # no server limit: no slot to take (one that never binds would still cost the floor CPU)
    server = asyncio.Semaphore(limits.per_server) if limits.per_server else contextlib.nullcontext()

    async def one(i: int, model: str) -> str:
        async with per_model[model], server:
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


async def open_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


async def timed_bare_step(
    session: aiohttp.ClientSession, api_base: str, limits: Limits
) -> tuple[float, float]:
    """A floor step's wait, and the CPU its thread spent on it."""
    cpu = time.thread_time()
    wait = await bare_step(session, api_base, limits)
    return wait, time.thread_time() - cpu


def measure(
    limits: Limits, steps: int, audit: bool, api_base: str, fake_pid: int
) -> tuple[list[str], list[str]]:
    """Two table rows, the floor's and the service's: the step waits of ``steps`` steps within
    ``limits``. The service (a fresh embedded one) and the floor (bare aiohttp on a loop of
    its own) take turns step by step, so a drift of this machine's speed hits both alike."""
    tmp = Path("/tmp") / f"js-grpo-{uuid.uuid4().hex[:6]}"
    tmp.mkdir()
    detectors = {} if audit else {"JS_DETECTORS": "none"}
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{tmp / 'grpo.db'}",
        JS_JUDGE_CONCURRENCY=str(limits.per_model),
        JS_ENDPOINT_CONCURRENCY=str(limits.per_server),
        **detectors,
    )
    server, url, key = start_service(env)
    judges = [{"name": model, "api_base": api_base} for model in MODELS]
    calls = PROMPTS * GENERATIONS * len(judges)
    bound = calls / limits.in_flight * LATENCY_S
    trainer, bare = TrainerLoop(), TrainerLoop()
    session = bare.run(open_session())
    waits: list[float] = []
    floor: list[float] = []
    service_cpu = fake_cpu = floor_cpu = floor_fake_cpu = 0.0
    try:
        reward = reward_function(url, api_key=key, judges=judges, run_id="grpo-bench")
        step_wait(reward, 0, trainer)  # warm-up: connections, caches
        bare.run(bare_step(session, api_base, limits))
        for step in range(1, steps + 1):
            service_before, fake_before = cpu_seconds(server.proc.pid), cpu_seconds(fake_pid)
            waits.append(step_wait(reward, step, trainer))
            service_cpu += cpu_seconds(server.proc.pid) - service_before
            fake_between = cpu_seconds(fake_pid)
            fake_cpu += fake_between - fake_before
            wait, cpu = bare.run(timed_bare_step(session, api_base, limits))
            floor.append(wait)
            floor_cpu += cpu
            floor_fake_cpu += cpu_seconds(fake_pid) - fake_between
    finally:
        bare.run(session.close())
        bare.close()
        trainer.close()
        server.stop()
    service_cpu, fake_cpu, floor_cpu, floor_fake_cpu = (
        total / steps for total in (service_cpu, fake_cpu, floor_cpu, floor_fake_cpu)
    )
    floor_wait = statistics.median(floor)

    def row(name: str, waits: list[float], cpu: float, fake: float, versus: str) -> list[str]:
        wait = statistics.median(waits)
        return [
            name,
            limits.describe(),
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
        "--concurrency", type=int, default=64, help="calls in flight in all (the first two rows)"
    )
    args = parser.parse_args()
    settings = (
        Limits(per_model=args.concurrency, per_server=args.concurrency),
        Limits(per_model=args.concurrency // len(MODELS)),
        Limits(per_model=args.concurrency),
    )
    fake, api_base = fake_judge_server(int(LATENCY_S * 1000))
    try:
        rows = [
            row
            for limits in settings
            for row in measure(limits, args.steps, args.audit, api_base, fake.proc.pid)
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
