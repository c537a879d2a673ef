"""How long a GRPO trainer waits for the rewards of one step, against the latency bound.

Each step is 256 completions (64 prompts x 4), scored through the TRL adapter
(``trainer_bridge.trl.reward_function``, as GRPOTrainer calls it: from one event loop
on a background thread) against ``judge-service serve`` (embedded: SQLite, the
in-process executor). The panel is three LLM judges (``openai/grpo-judge-a|b|c``)
on the OpenAI-compatible fake with 50 ms latency, so a step makes 768 judge calls.

The bound is what the latency alone allows: calls / concurrency x 50 ms, where the
concurrency is the service's in-flight limit in all (``JS_JUDGE_CONCURRENCY`` per model, times
three models). The goal is a step wait of at most 1.3x the bound. Two rows, in one run:

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

from rich.console import Console
from rich.table import Table

from bench.common import fake_judge_server, service_env, start_service
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


def measure(per_model: int, steps: int, audit: bool, api_base: str, fake_pid: int) -> list[str]:
    """One table row: the step waits of ``steps`` steps with ``per_model`` calls in flight
    per judge model, against a fresh embedded service."""
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
    wait = statistics.median(waits)
    return [
        f"{in_flight} ({per_model} per model)",
        str(calls),
        f"{bound:.3f}",
        f"{wait:.3f} ({min(waits):.3f}-{max(waits):.3f})",
        f"{wait / bound:.2f}x",
        f"{service_cpu:.3f}",
        f"{service_cpu / calls * 1000:.2f}",
        f"{fake_cpu:.3f}",
    ]


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
            measure(per_model, args.steps, args.audit, api_base, fake.proc.pid)
            for per_model in (args.concurrency // len(MODELS), args.concurrency)
        ]
    finally:
        fake.stop()
    table = Table(
        "in flight",
        "judge calls",
        "bound s",
        "step wait s (median)",
        "wait / bound (goal <= 1.3x)",
        "service CPU per step s",
        "CPU ms per call",
        "fake server CPU per step s",
        title=f"3 LLM judges on the 50 ms fake{', default audit' if args.audit else ''}",
    )
    for row in rows:
        table.add_row(*row)
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
