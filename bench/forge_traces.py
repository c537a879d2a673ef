"""Benchmark: the trace forge on real-shaped conversations, against ground truth, and its speed.

Quality, on the retail corpus (``data/retail``: 331 traces over 80 goals, 3-5 runs each, with
the goal, the true end state and the success label of every trace): forged tasks per goal,
distinct goals merged into one task, read/write classes right, consensus end states equal to
the truth (goals with at least two successful runs), and the failure signs' balanced accuracy
against the labels. The same run prints the figures with the packaged MiniLM model and with the
TF-IDF fallback, side by side.

Speed: ``--traces`` conversations (default 1,000) made by the corpus generator with other
goals and seeds, forged in this process (the job's pure part: parse, calls, classes, goals,
end states, embeddings, merge, consensus, families, signs). The baseline, measured in the same
run on the same traces, is the TF-IDF fallback; the ratio is MiniLM's time over it.

    python bench/forge_traces.py [--traces 1000] [--skip-speed]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from judge_service.forge.embed import TfidfEmbedder, get_embedder
from judge_service.forge.scoring import forge_figures
from judge_service.forge.trace_tasks import forge_traces
from judge_service.forge.traces import parse_traces

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "data" / "retail"
FIGURES = (
    ("tasks per goal", "tasks_per_goal", "<= 1.3"),
    ("goals merged into one task", "merged_goal_share", "<= 0.05"),
    ("read/write classes right", "tools_correct", "1.0"),
    ("consensus end state = truth", "reference_correct", ">= 0.95"),
    ("failure signs, balanced accuracy", "signs_balanced_accuracy", ">= 0.75"),
)


def _quality() -> None:
    text = (RETAIL / "traces.jsonl").read_text(encoding="utf-8")
    truth = {
        r["trace_id"]: r for r in map(json.loads, (RETAIL / "truth.jsonl").read_text().splitlines())
    }
    effects = json.loads((RETAIL / "tool_effects.json").read_text())
    traces = parse_traces(text)
    minilm, tfidf = get_embedder(), TfidfEmbedder()
    rows = []
    for embedder in (minilm, tfidf):
        started = time.perf_counter()
        forged = forge_traces(traces, embedder=embedder)
        rows.append((forge_figures(forged, truth, effects), time.perf_counter() - started))
    goals = rows[0][0]["goals"]
    print(f"retail corpus: {len(traces)} traces, {goals} goals")
    print(f"{'figure':36} {'target':>8} {'MiniLM':>8} {'TF-IDF':>8}")
    for label, key, target in FIGURES:
        print(f"{label:36} {target:>8} {rows[0][0][key]:>8} {rows[1][0][key]:>8}")
    print(f"{'forge time (s)':36} {'':>8} {rows[0][1]:>8.1f} {rows[1][1]:>8.1f}")
    print(f"MiniLM: {minilm.name}")


def _speed(count: int) -> None:
    sys.path.insert(0, str(RETAIL))
    import generate  # the corpus generator, data/retail/generate.py

    goals = max(1, count // 4)
    traces_out, _ = generate.generate(goals, seed=11, runs=(4, 4))
    lines = [json.dumps(t) for t in traces_out[:count]]
    sizes = sorted(
        len(json.dumps(t["messages"][1:]).encode()) for t in traces_out[:count]
    )  # the conversation, without the system prompt and the tool schemas
    text = "\n".join(lines) + "\n"
    print(
        f"\nspeed: {len(lines)} conversations, median {sizes[len(sizes) // 2] / 1024:.1f} KB "
        f"of messages ({len(text) / len(lines) / 1024:.1f} KB a line with tools and policy)"
    )
    timings = {}
    for name, embedder in (("tfidf (baseline)", TfidfEmbedder()), ("MiniLM", get_embedder())):
        started = time.perf_counter()
        forged = forge_traces(parse_traces(text), embedder=embedder)
        timings[name] = time.perf_counter() - started
        print(f"  {name:18} {timings[name]:6.1f} s  {len(forged.tasks)} tasks")
    ratio = timings["MiniLM"] / timings["tfidf (baseline)"]
    print(f"  MiniLM / baseline: {ratio:.2f}x; goal: under 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    get_embedder()  # the model loads once, outside every timing
    _quality()
    if not args.skip_speed:
        _speed(args.traces)


if __name__ == "__main__":
    main()
