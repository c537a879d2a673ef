"""Benchmark: how closely a world built from traces answers runs it was not built from.

On the retail corpus (``data/retail``: 331 traces over 80 goals, 3-5 runs each), one run of
every goal is held out (its last), the world is built from the others, and each held-out
run's tool calls are answered in order from the state its goal's other runs started from,
the state carried through the episode, by paths (a)-(d) only (no model). The answers are
compared with the real ones: exact-answer rate and field-level F1 (mean per call; an
unanswered call scores 0), overall, by path and by tool. The baseline, measured in the same
run on the same calls, is an exact-call replay cache over the building traces; the ratio is
the world's exact-answer rate over the baseline's.

Goals come from the corpus's ground truth (``truth.jsonl``); ``--tasks`` takes them from
forge tasks instead (TF-IDF goals), as the service will.

    python bench/world_fidelity.py [--tasks] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from judge_service.forge.embed import get_embedder
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.conversation import parse_traces
from judge_service.world.fidelity import Fidelity, Score, evaluate, hold_out, hold_out_tasks
from judge_service.world.model import PATH_LETTERS

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "data" / "retail"
TARGETS = {"exact": 0.90, "f1": 0.97}


def _row(label: str, score: Score, base: Score | None = None) -> str:
    line = (
        f"{label:36} {score.calls:>6} {score.answered:>6} {score.exact_rate:>7.3f} {score.f1:>7.3f}"
    )
    if base is not None:
        line += f"   {base.answered:>6} {base.exact_rate:>7.3f} {base.f1:>7.3f}"
    return line


def _print(report: Fidelity, built_s: float, size: int) -> None:
    head = f"{'':36} {'calls':>6} {'answd':>6} {'exact':>7} {'F1':>7}"
    print(f"{head}   {'cache':>6} {'exact':>7} {'F1':>7}   (cache: exact-call replay baseline)")
    print(_row("world, paths (a)-(d)", report.world, report.baseline))
    print(f"ratio, exact (world / baseline): {report.ratio:.3f}")
    targets = ", ".join(f"{k} >= {v}" for k, v in TARGETS.items())
    print(f"targets: {targets}; build and answer {built_s:.2f} s; world JSON {size / 1e6:.1f} MB")
    print("\nby path")
    for path, score in sorted(report.by_path.items(), key=lambda p: PATH_LETTERS[p[0]]):
        print(_row(f"({PATH_LETTERS[path]}) {path}", score))
    print("\nby tool (paths: calls answered by each)")
    for tool, score in sorted(report.by_tool.items()):
        paths = report.paths_by_tool[tool]
        order = sorted(paths, key=PATH_LETTERS.__getitem__)
        shares = " ".join(f"{PATH_LETTERS[p]}:{paths[p]}" for p in order)
        print(f"{_row(tool, score, report.baseline_by_tool[tool])}   {shares}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", action="store_true", help="goals from forge tasks (TF-IDF)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    traces = parse_traces((RETAIL / "traces.jsonl").read_text(encoding="utf-8"))
    if args.tasks:
        held = hold_out_tasks(forge_traces(traces, embedder=get_embedder("tfidf")).tasks)
    else:
        groups: dict[str, list[str]] = {}
        for line in (RETAIL / "truth.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            groups.setdefault(row["goal_id"], []).append(row["trace_id"])
        held = hold_out(groups)
    started = time.perf_counter()
    world, report = evaluate(traces, held)
    built_s = time.perf_counter() - started
    print(f"retail corpus: {len(traces)} traces, {len(held)} held-out runs")
    if args.json:
        print(json.dumps(report.figures(), indent=2))
    else:
        _print(report, built_s, len(world.model_dump_json()))
    met = report.world.exact_rate >= TARGETS["exact"] and report.world.f1 >= TARGETS["f1"]
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
