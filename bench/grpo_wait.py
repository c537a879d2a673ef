"""How long a GRPO trainer waits for the rewards of one step, in judge calls.

Each step is 256 completions (64 prompts x 4), scored through the TRL adapter
(``trainer_bridge.trl.reward_function``) against ``judge-service serve`` (embedded).
The baseline, measured in the same run, is one call of the same judge on its own.
Batched and concurrent, a step should cost about one judge call, not 256.

Two judges: ``slow_constant`` (the test plugin's judge that answers after 50 ms: the
service's own overhead) and an LLM judge on the OpenAI-compatible fake with 50 ms
latency (adds litellm's per-call CPU cost).

    .venv/bin/python bench/grpo_wait.py [--steps 20] [--audit] [--judge constant|llm]

To compare two builds (A/B), run the constant judge alone against each in turn:
``git worktree add /tmp/ab <rev>`` then ``PYTHONPATH=/tmp/ab`` for the other build.

The trainer side calls the reward function the way GRPOTrainer does: from one
event loop on a background thread, every step. Without ``--audit`` the service runs
the judges only (``JS_DETECTORS=none``); with it, also the default detectors.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
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
from tests.helpers import installed_test_plugin
from trainer_bridge.trl import reward_function

LATENCY_S = 0.05
PROMPTS, GENERATIONS = 64, 4


class State:
    def __init__(self, step: int) -> None:
        self.global_step = step


_plugin = contextlib.ExitStack()


def ensure_test_plugin() -> None:
    """The 50 ms judge lives in the tests' out-of-tree plugin package: when it is not
    importable, install it in a temporary folder for this run (removed at exit)."""
    try:
        import js_test_plugin  # noqa: F401
    except ImportError:
        _plugin.enter_context(installed_test_plugin())
        atexit.register(_plugin.close)


async def one_call(judge: dict) -> float:
    """Seconds for a single call of the judge, outside the service (the unit)."""
    if judge["name"] == "slow_constant":
        from js_test_plugin.judges import SlowConstantJudge

        from judge_service.contracts import JudgeContext
        from judge_service.domain import Sample

        started = time.perf_counter()
        await SlowConstantJudge(delay_s=LATENCY_S).score(
            Sample(id="x", prompt="p", completion="c"), JudgeContext()
        )
        return time.perf_counter() - started
    import litellm

    started = time.perf_counter()
    await litellm.acompletion(
        model=judge["name"],
        api_base=judge["api_base"],
        api_key="sk",
        messages=[{"role": "user", "content": uuid.uuid4().hex}],
    )
    return time.perf_counter() - started


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
    """User plus system CPU of a process so far (Linux ``/proc``), to show what a step
    costs the service itself: the ratio depends on how fast the machine is."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--audit", action="store_true", help="keep the default hindsight audit on (CPU detectors)"
    )
    parser.add_argument(
        "--judge", choices=("constant", "llm"), help="only this judge (default: both)"
    )
    args = parser.parse_args()
    ensure_test_plugin()
    fake, api_base = fake_judge_server(int(LATENCY_S * 1000))
    tmp = Path("/tmp") / f"js-grpo-{uuid.uuid4().hex[:6]}"
    tmp.mkdir()
    detectors = {} if args.audit else {"JS_DETECTORS": "none"}
    env = service_env(JS_DATABASE_URL=f"sqlite:///{tmp / 'grpo.db'}", **detectors)
    server, url, key = start_service(env)
    judges = {
        "slow_constant (50 ms)": {"name": "slow_constant", "delay_s": LATENCY_S, "score": 0.5},
        "LLM on fake (50 ms)": {
            "name": "openai/grpo-judge",
            "api_base": api_base,
            "api_key": "sk",
            "concurrency": 256,
        },
    }
    if args.judge is not None:
        wanted = "slow_constant" if args.judge == "constant" else "LLM"
        judges = {label: spec for label, spec in judges.items() if label.startswith(wanted)}
    table = Table(
        "judge",
        "one call s",
        "step wait s (median)",
        "wait / one call",
        "service CPU per step s",
        "sequential would be",
    )
    trainer = TrainerLoop()
    try:
        for label, judge in judges.items():
            reward = reward_function(url, api_key=key, judges=[judge], run_id="grpo-bench")
            step_wait(reward, 0, trainer)  # warm-up
            unit = statistics.median(asyncio.run(one_call(judge)) for _ in range(5))
            cpu_before = cpu_seconds(server.proc.pid)
            waits = [step_wait(reward, step, trainer) for step in range(1, args.steps + 1)]
            service_cpu = (cpu_seconds(server.proc.pid) - cpu_before) / args.steps
            wait = statistics.median(waits)
            table.add_row(
                label,
                f"{unit:.3f}",
                f"{wait:.3f}",
                f"{wait / unit:.2f}x",
                f"{service_cpu:.3f}",
                f"{PROMPTS * GENERATIONS}x",
            )
    finally:
        trainer.close()
        server.stop()
        fake.stop()
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
