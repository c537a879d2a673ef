"""Benchmark: the trace forge on real runs per domain, on the generated corpus, and its speed.

Real runs (the yardstick, issue 50): ``data/real_traces`` holds τ²-bench runs with the
environment's reward, retail (two agents, one run each of 114 goals) and telecom (the user
has tools of their own). Each domain is forged as ``../shared/tools/real_yardstick.py``
uploads it (``id`` and ``messages`` only: no label reaches the forge) and measured against
the runs' goals, rewards and the tasks' ground-truth actions (``bench/real_traces_figures.py``
says how each figure is counted). The generated corpus (``data/retail``: 331 traces over 80
goals) is measured the same way in the last column: it is a fixture, not the yardstick.

Generated corpus, its own figures: forged tasks per goal, distinct goals merged into one task,
read/write classes right, consensus end states equal to the truth, the failure signs' balanced
accuracy, with the packaged MiniLM model and the TF-IDF fallback side by side.

Speed: ``--traces`` conversations (default 1,000) made by the corpus generator with other
goals and seeds and brought to real length (at least 15 KB of conversation each, the real
retail runs' median, besides the system prompt): after each order the agent looked up, it
also looks up the order's products, as real agents do, answered from the corpus's database.
They are forged in this process (the job's pure part: parse, calls, classes, goals, end
states, embeddings, merge, consensus, families, signs). The baseline, in the same run on the
same traces, is the TF-IDF fallback; the ratio is MiniLM's time over it.

    python bench/forge_traces.py [--domain retail --domain generated ...] [--skip-speed]
        [--traces 1000] [--json] [--renamed]

``--renamed`` adds, beside each real domain, its runs with every tool named ``op_<n>`` and every
field of the calls and answers in the other case style (``bench/real_traces_figures.renamed``):
no rule may rest on one domain's names.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.real_traces_figures import (
    generated_runs,
    measure,
    real_domains,
    real_runs,
    renamed,
    table,
)
from judge_service.forge.embed import Embedder, TfidfEmbedder, get_embedder
from judge_service.forge.scoring import forge_figures
from judge_service.forge.trace_tasks import forge_traces
from judge_service.traces.conversation import parse_traces

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "data" / "retail"
FIGURES = (
    ("tasks per goal", "tasks_per_goal", "<= 1.2"),
    ("goals merged (share of tasks)", "merged_goal_share", "<= 0.03"),
    ("read/write classes right", "tools_correct", "1.0"),
    ("consensus end state = truth", "reference_correct", ">= 0.95"),
    ("failure signs, balanced accuracy", "signs_balanced_accuracy", ">= 0.80"),
)
#: Conversation bytes (the messages after the system prompt) a speed trace is brought to.
REAL_LENGTH = 15 * 1024


def _per_domain(
    domains: list[str], embedder: Embedder, other_names: bool = False
) -> dict[str, dict[str, Any]]:
    columns = {}
    for domain in domains:
        runs, truth = generated_runs() if domain == "generated" else real_runs(domain)
        columns[domain] = measure(runs, truth, embedder)
        if other_names and domain != "generated":
            columns[f"{domain} renamed"] = measure(*renamed(runs, truth), embedder)
    print("per domain (MiniLM; real runs uploaded as id and messages only):")
    print(table(columns))
    return columns


def _quality() -> dict[str, Any]:
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
    print(f"\ngenerated corpus, full uploads (tools, labels): {len(traces)} traces, {goals} goals")
    print(f"{'figure':36} {'target':>8} {'MiniLM':>8} {'TF-IDF':>8}")
    for label, key, target in FIGURES:
        print(f"{label:36} {target:>8} {rows[0][0][key]!s:>8} {rows[1][0][key]!s:>8}")
    print(f"{'forge time (s)':36} {'':>8} {rows[0][1]:>8.1f} {rows[1][1]:>8.1f}")
    print(f"MiniLM: {minilm.name}")
    return {
        "minilm": {k: v for k, v in rows[0][0].items() if k != "signs"},
        "tfidf": {k: v for k, v in rows[1][0].items() if k != "signs"},
    }


def _conversation_bytes(messages: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages[1:]).encode())


def real_length(
    trace: dict[str, Any], products: dict[str, Any], target: int = REAL_LENGTH
) -> dict[str, Any]:
    """``trace`` with product lookups (``get_product_details``, answered from ``products``)
    after each order the agent looked up, then of more products, until its conversation holds
    ``target`` bytes; the user's turns and every write stay as they were."""
    messages = list(trace["messages"])
    after = [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "tool" and m.get("name") == "get_order_details"
    ] or [next(i for i, m in enumerate(messages) if m.get("role") == "tool")]
    wanted: list[tuple[int, str]] = []
    for i in after:
        try:
            items = json.loads(messages[i]["content"]).get("items") or []
        except (ValueError, AttributeError):
            items = []
        wanted += [(i, pid) for pid in dict.fromkeys(it["product_id"] for it in items)]
    others = sorted(products)
    start = sum(map(ord, trace["id"])) % len(others)
    wanted += [(after[-1], others[(start + n) % len(others)]) for n in range(len(others))]
    inserts: dict[int, list[dict[str, Any]]] = {}
    size = _conversation_bytes(messages)
    for n, (i, pid) in enumerate(wanted):
        if size >= target:
            break
        call_id = f"call_lookup_{n}"
        pair = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "get_product_details",
                            "arguments": json.dumps({"product_id": pid}),
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": "get_product_details",
                "content": json.dumps(products[pid]),
            },
        ]
        inserts.setdefault(i, []).extend(pair)
        size += len(json.dumps(pair).encode())
    out = []
    for i, message in enumerate(messages):
        out.append(message)
        out += inserts.get(i, [])
    return {**trace, "messages": out}


def speed_corpus(count: int) -> list[dict[str, Any]]:
    """``count`` generated conversations at real length (``id``, ``messages``, ``tools``)."""
    sys.path.insert(0, str(RETAIL))
    import generate  # the corpus generator, data/retail/generate.py

    products = json.loads((RETAIL / "db" / "products.json").read_text())
    traces, _ = generate.generate(max(1, count // 4), seed=11, runs=(4, 4))
    return [
        {k: v for k, v in real_length(t, products).items() if k != "metadata"}
        for t in traces[:count]
    ]


def _speed(count: int) -> dict[str, Any]:
    traces = speed_corpus(count)
    text = "".join(json.dumps(t) + "\n" for t in traces)
    conversation = sorted(_conversation_bytes(t["messages"]) for t in traces)
    messages = sorted(len(json.dumps(t["messages"]).encode()) for t in traces)
    median = len(traces) // 2
    print(
        f"\nspeed: {len(traces)} conversations; median {conversation[median] / 1024:.1f} KB of "
        f"conversation (min {conversation[0] / 1024:.1f}), {messages[median] / 1024:.1f} KB "
        f"with the system prompt, {len(text) / len(traces) / 1024:.1f} KB a line with tools"
    )
    timings = {}
    for name, embedder in (("tfidf (baseline)", TfidfEmbedder()), ("MiniLM", get_embedder())):
        started = time.perf_counter()
        forged = forge_traces(parse_traces(text), embedder=embedder)
        timings[name] = time.perf_counter() - started
        print(f"  {name:18} {timings[name]:6.1f} s  {len(forged.tasks)} tasks")
    ratio = timings["MiniLM"] / timings["tfidf (baseline)"]
    print(f"  MiniLM / baseline: {ratio:.2f}x; goal: under 60 s")
    return {
        "traces": len(traces),
        "median_conversation_kb": round(conversation[median] / 1024, 1),
        "median_messages_kb": round(messages[median] / 1024, 1),
        "seconds": {k: round(v, 1) for k, v in timings.items()},
    }


def main() -> None:
    domains = [*real_domains(), "generated"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--domain",
        action="append",
        choices=domains,
        help="a domain to measure (repeatable; default: all, the generated corpus last)",
    )
    parser.add_argument("--traces", type=int, default=1000, help="conversations timed")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--json", action="store_true", help="also print every figure as JSON")
    parser.add_argument(
        "--renamed",
        action="store_true",
        help="beside each real domain, its runs with every tool and field renamed",
    )
    args = parser.parse_args()
    chosen = [d for d in domains if d in (args.domain or domains)]
    started = time.perf_counter()
    embedder = get_embedder()  # the model loads once, outside every timing
    report: dict[str, Any] = {"embedding_model": embedder.name}
    report["domains"] = _per_domain(chosen, embedder, args.renamed)
    if "generated" in chosen:
        report["generated"] = _quality()
    if not args.skip_speed:
        report["speed"] = _speed(args.traces)
    print(f"\nwhole bench: {time.perf_counter() - started:.0f} s")
    if args.json:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
