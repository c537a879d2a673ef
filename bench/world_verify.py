"""Benchmark: does the world's end-state verdict agree with the corpus's success labels?

On the retail corpus (``data/retail``), forge tasks are built as the service builds them
(TF-IDF goals), one run of every task with repeats is held out, and the world is built from
the other runs. Each held-out run's messages are replayed through the world from the state
its task's other runs started from (``world.task_state``) and judged against its task's
consensus reference end state (:func:`judge_service.world.verify.verify`). ``reached`` is
compared with ``truth.jsonl``'s ``outcome == "success"``; an undetermined verdict counts as a
disagreement.

A trace may hold goals of more than one task. A held-out run is judged only on the goals of
the task it was held out for: the calls before its first goal are replayed to carry the state
(no verdict), then the verdict covers the messages from its first goal's start to its last
goal's end. When the trace holds only that task, that is the whole trace.

The baseline, in the same run on the same held-out runs, is the check a user without a world
would write: the run's successful write calls (tool and canonical arguments, in order) are
the same list as those of another run of the task labelled a success (ground-truth labels of
the other runs, so the baseline is given more than the world). It fails a run that reached
the right state through calls no labelled run made; the verdict compares states. The ratio
is the world's agreement over the baseline's. Runs "through other calls" are the successes
whose write calls differ from their goal's ground-truth actions (``tasks_train.jsonl``);
only the benchmark reads those, the world never does.

Figures at the time of writing (79 held-out runs): agreement 0.987 (65 reached/success,
13 not/failure, 1 undetermined: the task without a consensus reference); baseline 0.949;
ratio 1.040; 7 successes through other calls, the verdict agrees on 6 (the 7th is the task
without a reference), the baseline on 4. Before the world learned the item modification's
payment entry (a payment or a refund by the difference's sign): 0.962, 3 undetermined.

    python bench/world_verify.py [--json] [--show N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from judge_service.forge.embed import get_embedder
from judge_service.forge.trace_tasks import TraceTask, forge_traces
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace, parse_traces
from judge_service.traces.entities import canonical
from judge_service.world.build import build_world
from judge_service.world.fidelity import hold_out_tasks
from judge_service.world.trajectory import replay
from judge_service.world.verify import verify

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "data" / "retail"
TARGET = 0.95


def _held_task(tasks: list[TraceTask], held: str, siblings: list[str]) -> TraceTask:
    """The task a run was held out for: it holds the run and all the siblings."""
    return next(t for t in tasks if held in t.trace_ids and set(siblings) <= set(t.trace_ids))


def _window(tasks: list[TraceTask], task: TraceTask, trace: Trace) -> tuple[int, int]:
    """Messages ``[start, end)`` of the task's goals in the trace (all of it when the trace
    holds no other task's goal)."""
    parts = [g for g, _ in task.parts(trace.id)]
    others = [t for t in tasks if t is not task and trace.id in t.trace_ids]
    if not others:
        return 0, len(trace.messages)
    return min(g.start for g in parts), max(g.end for g in parts)


def write_list(trace: Trace, writes: set[str], start: int = 0, end: int | None = None) -> list:
    """The trace's successful write calls in ``[start, end)``: ``[tool, canonical args]``."""
    end = len(trace.messages) if end is None else end
    return [
        [c.name, canonical(c.arguments)]
        for c in tool_calls(trace)
        if c.name in writes and not c.error and start <= c.turn < end
    ]


def measure(
    traces: list[Trace], truth: dict[str, dict[str, Any]], actions: dict[str, list[dict]]
) -> dict[str, Any]:
    """Verdicts on every held-out run, the baseline's answers, and the figures
    (``actions``: each goal's ground-truth write actions, to tell the runs that reached
    the reference through other calls)."""
    forge = forge_traces(traces, embedder=get_embedder("tfidf"))
    tasks = forge.tasks
    held = hold_out_tasks(tasks)
    world = build_world([t for t in traces if t.id not in held])
    by_id = {t.id: t for t in traces}
    writes = {n for n, e in forge.tools.items() if e.effect == "write"}
    rows = []
    for run, siblings in held.items():
        task = _held_task(tasks, run, siblings)
        trace = by_id[run]
        start, end = _window(tasks, task, trace)
        state = world.task_state(siblings)
        if start:
            state, _ = replay(world, state, trace.messages[:start])
        reference = task.consensus.reference if task.consensus else None
        verdict, calls = verify(world, state, trace.messages[start:end], reference)
        success = truth[run]["outcome"] == "success"
        mine = write_list(trace, writes, start, end)
        good = [s for s in siblings if truth[s]["outcome"] == "success"]
        planned = [[a["name"], canonical(a["kwargs"])] for a in actions[truth[run]["goal_id"]]]
        rows.append(
            {
                "trace": run,
                "success": success,
                "mistake": truth[run]["mistake"],
                "reward": verdict.reward,
                "reached": verdict.reached,
                "diff": verdict.diff,
                "undetermined": verdict.undetermined,
                "paths": Counter(c["path"] for c in calls),
                "baseline": any(mine == write_list(by_id[s], writes) for s in good),
                "other_calls": mine != [a for a in planned if a[0] in writes],
            }
        )
    return {"rows": rows, "figures": figures(rows), "tasks": len(tasks)}


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    agree = sum(r["reached"] is not None and r["reached"] == r["success"] for r in rows)
    base = sum(r["baseline"] == r["success"] for r in rows)
    confusion = Counter(
        f"{'reached' if r['reached'] else 'undetermined' if r['reached'] is None else 'not'}"
        f"/{'success' if r['success'] else 'failure'}"
        for r in rows
    )
    other = [r for r in rows if r["success"] and r["other_calls"]]
    return {
        "held_out_runs": n,
        "agreement": round(agree / n, 4) if n else 0.0,
        "confusion": dict(sorted(confusion.items())),
        "undetermined": sum(r["reached"] is None for r in rows),
        "successes_through_other_calls": len(other),
        "of_them_agreeing": sum(r["reached"] is True for r in other),
        "baseline_agreement": round(base / n, 4) if n else 0.0,
        "baseline_on_other_calls": sum(r["baseline"] for r in other),
        "ratio": round(agree / base, 3) if base else 0.0,
    }


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RETAIL / name).read_text(encoding="utf-8").splitlines()]


def load() -> tuple[list[Trace], dict[str, dict[str, Any]], dict[str, list[dict]]]:
    """The corpus, its labels by trace, and each goal's ground-truth actions."""
    traces = parse_traces((RETAIL / "traces.jsonl").read_text(encoding="utf-8"))
    truth = {row["trace_id"]: row for row in _rows("truth.jsonl")}
    actions = {
        f"task-{row['task_index']:04d}": row["actions"] for row in _rows("tasks_train.jsonl")
    }
    return traces, truth, actions


def _print(result: dict[str, Any], seconds: float, show: int) -> None:
    f = result["figures"]
    print(f"held-out runs {f['held_out_runs']} of {result['tasks']} tasks ({seconds:.1f} s)")
    print(f"verify agrees with the success labels: {f['agreement']:.3f} (target >= {TARGET})")
    print(f"  verdict/label counts: {f['confusion']}; undetermined {f['undetermined']}")
    print(
        f"  successes whose write calls differ from the goal's ground-truth actions: "
        f"{f['successes_through_other_calls']}, verify agrees on {f['of_them_agreeing']}, "
        f"the baseline on {f['baseline_on_other_calls']}"
    )
    print(f"baseline (same write-call list as a successful run): {f['baseline_agreement']:.3f}")
    print(f"ratio (verify / baseline): {f['ratio']:.3f}")
    for row in (r for r in result["rows"] if r["reached"] is None):
        why = ", ".join(row["undetermined"]) or "its task has no reference end state"
        label = "success" if row["success"] else "failure"
        print(f"  undetermined: {row['trace']} ({label}): {why}")
    wrong = [r for r in result["rows"] if r["reached"] != r["success"]]
    for row in wrong[:show]:
        print(
            f"\ndisagrees: {row['trace']} success={row['success']} mistake={row['mistake']} "
            f"reward={row['reward']} undetermined={row['undetermined']} "
            f"paths={dict(row['paths'])}"
        )
        for d in row["diff"][:6]:
            print(
                f"  {d['why']:12} {d['entity']} {d['field']}: want {str(d['want'])[:60]} "
                f"got {str(d['got'])[:60]}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--show", type=int, default=10, help="disagreements to list")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = measure(*load())
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps(result["figures"], indent=2))
    else:
        _print(result, seconds, args.show)
    return 0 if result["figures"]["agreement"] >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
