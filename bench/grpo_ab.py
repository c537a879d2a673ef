"""Two builds of the service, A and B, timed on the same GRPO steps in turn.

On a machine whose speed drifts from one minute to the next, two separate runs of
``grpo_wait.py`` can differ by more than a change being measured. Here one trainer
loop sends step 1 to A then B, step 2 to B then A, and so on, so both builds see the
same drift; the difference of the medians is what the change is worth.

    git worktree add /tmp/a <rev>
    .venv/bin/python bench/grpo_ab.py /tmp/a . [--steps 100]

Each build is the tree at that path, put first on ``PYTHONPATH`` of its service (the
trainer side, ``trainer_bridge``, is this checkout's for both). Judges only, the
50 ms ``slow_constant`` judge, SQLite, embedded; as ``grpo_wait.py`` otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at run time

from bench.common import service_env, start_service
from bench.grpo_wait import LATENCY_S, TrainerLoop, ensure_test_plugin, step_wait
from trainer_bridge.trl import reward_function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="the tree of build A (the baseline)")
    parser.add_argument("b", type=Path, help="the tree of build B")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    ensure_test_plugin()
    judge = {"name": "slow_constant", "delay_s": LATENCY_S, "score": 0.5}
    servers, rewards = {}, {}
    trainer = TrainerLoop()
    try:
        for label, tree in (("A", args.a), ("B", args.b)):
            home = Path("/tmp") / f"js-ab-{uuid.uuid4().hex[:6]}"
            home.mkdir()
            env = service_env(
                JS_DATABASE_URL=f"sqlite:///{home / 'ab.db'}",
                JS_DETECTORS="none",
                # the tree first; then what was there (the test plugin's folder)
                PYTHONPATH=os.pathsep.join(
                    filter(None, [str(tree.resolve()), os.environ.get("PYTHONPATH")])
                ),
            )
            servers[label] = start_service(env)
            _, url, key = servers[label]
            rewards[label] = reward_function(url, api_key=key, judges=[judge], run_id="ab")
            step_wait(rewards[label], 0, trainer)  # warm-up
        waits: dict[str, list[float]] = {"A": [], "B": []}
        for step in range(1, args.steps + 1):
            for label in ("A", "B") if step % 2 else ("B", "A"):
                waits[label].append(step_wait(rewards[label], step, trainer))
    finally:
        trainer.close()
        for child, _, _ in servers.values():
            child.stop()
    a, b = (statistics.median(waits[label]) for label in ("A", "B"))
    for label, tree, wait in (("A", args.a, a), ("B", args.b, b)):
        print(f"{label} {tree}: {wait * 1e3:.1f} ms a step ({wait / LATENCY_S:.2f}x one call)")
    print(f"B - A: {(b - a) * 1e3:+.1f} ms a step; B / A: {b / a:.3f}")


if __name__ == "__main__":
    main()
