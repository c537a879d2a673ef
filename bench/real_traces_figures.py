"""The forge's figures against runs whose goals and rewards are known (issue 50's yardstick).

The runs go to the forge as ``../shared/tools/real_yardstick.py`` uploads them: only ``id`` and
``messages`` each, so the forge sees no label. The figures are then read against each run's
``metadata.task_id`` (its goal) and ``metadata.reward`` (``< 1``: the run failed), and the
tasks' ground-truth actions (``data/real_traces/tasks_<domain>.jsonl``; measuring only, the
service never reads them):

- tasks per goal: the distinct forged tasks the runs of one goal land in (ideal 1);
- goals merged: the share of goals whose runs share a forged task with another goal's run;
- failure signs: balanced accuracy, precision and recall of "the run is marked failed" (its id
  is in some task's ``failures``) against the reward, and each sign kind's precision over the
  runs it marks;
- goals with a reference: some task of the goal has ``consensus.reference is not None`` (the
  empty end state ``{}`` counts);
- reference = ground truth: the goal's reference makes the same writes as its ground-truth
  actions, over the goals whose runs disagree (distinct end states) and over all goals. A
  reference's writes are those of a run that reached it (``TraceTask.trace_outcome``); a goal
  in several tasks takes the writes of each. The ground truth's writes are its actions whose
  tool the forge classed a write (``TraceForge.tools``; a tool no run called counts as a
  write, which no reference can then make). Writes compare as multisets of (tool, arguments),
  arguments as JSON with sorted keys and lists of plain values sorted. An empty reference
  matches a ground truth with no write. The same comparison of each successful run's own
  writes with its goal's ground truth is the comparison's ceiling: τ²-bench's ground-truth
  actions include calls that the environment refuses (an exchange on a pending order, a
  refund to a method it does not allow), which no run's successful writes hold.

``generated_runs`` reads the project's generated corpus (``data/retail``) in the same shape, so
the same function gives its column beside the real domains.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judge_service.forge.embed import Embedder
from judge_service.forge.trace_tasks import TraceForge, forge_traces
from judge_service.traces.conversation import parse_traces
from judge_service.traces.entities import canonical

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "data" / "real_traces"
GENERATED = ROOT / "data" / "retail"

Run = dict[str, Any]
#: goal -> its ground-truth actions, each ``{"name", "arguments"}``.
Truth = dict[str, list[dict[str, Any]]]

#: (label, key, target, passes): the issue's figures and marks, in table order.
TARGETS: tuple[tuple[str, str, str, Any], ...] = (
    ("tasks per goal", "tasks_per_goal", "<= 1.2", lambda v: v <= 1.2),
    ("goals merged with another", "goals_merged", "<= 0.03", lambda v: v <= 0.03),
    ("signs: balanced accuracy", "signs_balanced_accuracy", ">= 0.80", lambda v: v >= 0.80),
    ("signs: precision", "signs_precision", ">= 0.80", lambda v: v >= 0.80),
    ("signs: recall", "signs_recall", "", None),
    ("goals with a reference", "goals_with_reference", "1.0", lambda v: v >= 1.0),
    ("ref = GT writes, runs disagree", "reference_gt_disagreeing", ">= 0.80", lambda v: v >= 0.8),
    ("ref = GT writes, all goals", "reference_gt_all", "", None),
    ("successful run's writes = GT", "passed_runs_gt", "", None),
)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def real_domains(folder: Path = REAL) -> list[str]:
    """The domains of the runs in ``folder``, sorted."""
    found = {
        run["metadata"]["domain"]
        for path in folder.glob("*.jsonl")
        if not path.name.startswith("tasks_")
        for run in _jsonl(path)
    }
    return sorted(found)


def real_runs(domain: str, folder: Path = REAL) -> tuple[list[Run], Truth]:
    """The runs of ``domain`` (every agent's file, by ``metadata.domain``) and its goals'
    ground-truth actions."""
    runs = [
        run
        for path in sorted(folder.glob("*.jsonl"))
        if not path.name.startswith("tasks_")
        for run in _jsonl(path)
        if run["metadata"]["domain"] == domain
    ]
    truth = {
        str(task["task_id"]): [
            {"name": a["name"], "arguments": a.get("arguments") or {}} for a in task["actions"]
        ]
        for task in _jsonl(folder / f"tasks_{domain}.jsonl")
    }
    return runs, truth


def generated_runs(folder: Path = GENERATED) -> tuple[list[Run], Truth]:
    """The generated retail corpus as runs with ``metadata.task_id`` and ``metadata.reward``
    (from ``truth.jsonl``), and its goals' ground-truth actions (``tasks_train.jsonl``)."""
    truth_rows = {r["trace_id"]: r for r in _jsonl(folder / "truth.jsonl")}
    runs = []
    for trace in _jsonl(folder / "traces.jsonl"):
        row = truth_rows[trace["id"]]
        reward = 1.0 if row["outcome"] == "success" else 0.0
        runs.append({**trace, "metadata": {"task_id": row["goal_id"], "reward": reward}})
    goals = {r["goal_id"] for r in truth_rows.values()}
    truth = {
        f"task-{task['task_index']:04d}": [
            {"name": a["name"], "arguments": a.get("kwargs") or {}} for a in task["actions"]
        ]
        for task in _jsonl(folder / "tasks_train.jsonl")
    }
    return runs, {g: truth[g] for g in goals if g in truth}


def _other_style(key: str) -> str:
    """A field's name in the other case style: ``order_id`` as ``orderId``, ``orderId`` as
    ``order_id``; a name of one lower-case word as it is."""
    if "_" in key:
        head, *rest = key.split("_")
        return head + "".join(part[:1].upper() + part[1:] for part in rest)
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _keys(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(str(key))
            _keys(item, found)
    elif isinstance(value, list):
        for item in value:
            _keys(item, found)


def renamed(runs: Sequence[Run], truth: Truth) -> tuple[list[Run], Truth]:
    """``runs`` and ``truth`` in another domain's words: every tool named ``op_<n>``, and
    every field of the calls' arguments and the tools' answers in the other case style
    (``order_id`` as ``orderId``). The forge and the world must measure the same on them:
    no rule may rest on one domain's names."""
    tools: set[str] = {a["name"] for actions in truth.values() for a in actions}
    fields: set[str] = set()
    for run in runs:
        for message in run["messages"]:
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                tools.add(function.get("name", ""))
                with contextlib.suppress(ValueError):  # a broken call names no field
                    _keys(json.loads(function.get("arguments") or "{}"), fields)
            if message.get("role") == "tool":
                with contextlib.suppress(ValueError, TypeError):  # a text answer has no fields
                    _keys(json.loads(message.get("content") or ""), fields)
    tools.discard("")
    # the runs' own keys (messages, metadata, calls) keep their names: only the domain's change
    fields -= {k for run in runs for k in (*run, *run.get("metadata", {}))}
    fields -= {k for run in runs for m in run["messages"] for k in m}
    fields -= {"function", "arguments", "name", "type", "id"}
    names = {n: f"op_{i}" for i, n in enumerate(sorted(tools, key=lambda n: (-len(n), n)))}
    names.update({f: _other_style(f) for f in fields if f not in names and _other_style(f) != f})
    text = json.dumps([list(runs), truth])
    for old, new in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(f'"{old}"', f'"{new}"').replace(f'\\"{old}\\"', f'\\"{new}\\"')
    new_runs, new_truth = json.loads(text)
    return new_runs, new_truth


def upload_text(runs: Iterable[Run]) -> str:
    """What the yardstick uploads: ``id`` and ``messages`` of each run, nothing else."""
    return "\n".join(json.dumps({"id": r["id"], "messages": r["messages"]}) for r in runs) + "\n"


def _plain(value: Any) -> Any:
    """``value`` for comparison: dicts by sorted keys, lists of plain values sorted (ids in
    any order), whole floats as ints."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        if all(isinstance(v, str | int | float | bool) or v is None for v in items):
            return sorted(items, key=lambda v: json.dumps(v))
        return items
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def write_key(tool: str, arguments: Any) -> tuple[str, str]:
    return tool, json.dumps(_plain(arguments or {}), sort_keys=True)


def same_writes(
    made: Sequence[Mapping[str, Any]] | None,
    truth: Sequence[Mapping[str, Any]],
    writers: Iterable[str],
    known: Iterable[str] = (),
) -> bool:
    """Whether ``made`` (``{"tool", "arguments"}`` each, or ``None`` for no reference) are the
    write actions of ``truth`` (``{"name", "arguments"}`` each), as multisets. A ground-truth
    tool in neither ``writers`` nor ``known`` (the forge never saw it) counts as a write."""
    if made is None:
        return False
    writers, known = set(writers), set(known)
    expected = Counter(
        write_key(a["name"], a.get("arguments"))
        for a in truth
        if a["name"] in writers or a["name"] not in known
    )
    return Counter(write_key(w["tool"], w.get("arguments")) for w in made) == expected


def _reference_writes(task: Any, prefer: Sequence[str]) -> list[dict[str, Any]] | None:
    """The writes of a run of ``task`` that reached its reference (``prefer``'s runs first);
    ``[]`` for an empty reference no run reached; ``None`` without a reference."""
    reference = None if task.consensus is None else task.consensus.reference
    if reference is None:
        return None
    wanted = canonical(reference)
    order = [t for t in task.trace_ids if t in prefer] + [
        t for t in task.trace_ids if t not in prefer
    ]
    for trace_id in order:
        outcome = task.trace_outcome(trace_id)
        if canonical(outcome.end_state) == wanted:
            return list(outcome.writes)
    return [] if not reference else None


def _balanced(pairs: Sequence[tuple[bool, bool]]) -> float:
    positives = [p for p, y in pairs if y]
    negatives = [not p for p, y in pairs if not y]
    rates = [sum(v) / len(v) for v in (positives, negatives) if v]
    return sum(rates) / len(rates) if rates else 0.0


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 3) if total else None


def figures(runs: Sequence[Run], forged: TraceForge, truth: Truth) -> dict[str, Any]:
    """The figures of one domain (module docstring) from its runs and the forge's result."""
    goal = {r["id"]: str(r["metadata"]["task_id"]) for r in runs}
    failed = {r["id"]: float(r["metadata"]["reward"]) < 1 for r in runs}
    tasks = forged.tasks
    task_of: dict[str, set[int]] = defaultdict(set)
    goals_of: dict[int, set[str]] = defaultdict(set)
    kinds: dict[str, set[str]] = defaultdict(set)
    for index, task in enumerate(tasks):
        for trace_id in task.trace_ids:
            if trace_id in goal:
                task_of[trace_id].add(index)
                goals_of[index].add(goal[trace_id])
        for sign in task.failures:
            kinds[sign["kind"]].add(sign["trace_id"])
    marked = set().union(*kinds.values()) if kinds else set()
    by_goal: dict[str, list[str]] = defaultdict(list)
    for trace_id, g in goal.items():
        by_goal[g].append(trace_id)
    tasks_of = {g: sorted(set().union(*(task_of[t] for t in ids))) for g, ids in by_goal.items()}

    merged = sum(any(len(goals_of[i]) > 1 for i in idx) for idx in tasks_of.values())
    with_reference = sum(
        any(tasks[i].consensus and tasks[i].consensus.reference is not None for i in idx)
        for idx in tasks_of.values()
    )
    pairs = [(t in marked, failed[t]) for t in goal]
    tp = sum(p and y for p, y in pairs)
    fp = sum(p and not y for p, y in pairs)

    writers = {n for n, e in forged.tools.items() if e.effect == "write"}
    disagree = hits_disagree = hits_all = 0
    for g, ids in by_goal.items():
        ends = set()
        for trace_id in ids:
            state: dict[str, Any] = {}
            for i in sorted(task_of[trace_id]):
                state.update(tasks[i].trace_outcome(trace_id).end_state)
            ends.add(canonical(state))
        made: list[dict[str, Any]] | None = []
        for i in tasks_of[g]:
            writes = _reference_writes(tasks[i], ids)
            made = None if writes is None or made is None else made + writes
        hit = bool(tasks_of[g]) and same_writes(made, truth.get(g, []), writers, forged.tools)
        hits_all += hit
        if len(ends) > 1:
            disagree += 1
            hits_disagree += hit

    # the comparison's ceiling: a successful run's own writes against its goal's ground truth
    passed = [t for t in goal if not failed[t]]
    own = sum(
        same_writes(
            [w for i in sorted(task_of[t]) for w in tasks[i].trace_outcome(t).writes],
            truth.get(goal[t], []),
            writers,
            forged.tools,
        )
        for t in passed
    )
    sources = Counter(
        (t.consensus.source or "unnamed")
        if t.consensus and t.consensus.reference is not None
        else "none"
        for t in tasks
    )
    return {
        "runs": len(runs),
        "goals": len(by_goal),
        "failed_runs": sum(failed.values()),
        "tasks": len(tasks),
        "tasks_per_goal": round(sum(map(len, tasks_of.values())) / max(1, len(by_goal)), 3),
        "goals_merged": round(merged / max(1, len(by_goal)), 3),
        "signs_balanced_accuracy": round(_balanced(pairs), 3),
        "signs_precision": round(tp / max(1, tp + fp), 3),
        "signs_recall": round(tp / max(1, sum(failed.values())), 3),
        "sign_precision": {
            kind: {"runs": len(ids), "precision": round(sum(failed[t] for t in ids) / len(ids), 3)}
            for kind, ids in sorted(kinds.items())
            if ids
        },
        "goals_with_reference": round(with_reference / max(1, len(by_goal)), 3),
        "disagreeing_goals": disagree,
        "reference_gt_disagreeing": _share(hits_disagree, disagree),
        "reference_gt_all": _share(hits_all, len(by_goal)),
        "passed_runs_gt": _share(own, len(passed)),
        "reference_sources": dict(sorted(sources.items())),
        "runs_in_no_task": sum(1 for t in goal if not task_of[t]),
        "set_aside": len(forged.set_aside),
    }


def measure(runs: Sequence[Run], truth: Truth, embedder: Embedder) -> dict[str, Any]:
    """Forge ``runs`` as the yardstick uploads them and return their :func:`figures`, with the
    forge's time (``seconds``)."""
    started = time.perf_counter()
    forged = forge_traces(parse_traces(upload_text(runs)), embedder=embedder)
    seconds = time.perf_counter() - started
    return {**figures(runs, forged, truth), "seconds": round(seconds, 1)}


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.1f}"
    return str(value)


def table(columns: Mapping[str, Mapping[str, Any]]) -> str:
    """The figures as a plain-text table: a row per figure with its target, a column per
    domain; a figure that misses its target is marked ``✗``."""
    names = list(columns)
    rows: list[list[str]] = []

    def row(label: str, target: str, values: list[str]) -> None:
        rows.append([label, target, *values])

    row(
        "runs / goals / failed runs",
        "",
        [f"{c['runs']} / {c['goals']} / {c['failed_runs']}" for c in columns.values()],
    )
    row("forged tasks", "", [str(c["tasks"]) for c in columns.values()])
    for label, key, target, passes in TARGETS:
        cells = []
        for c in columns.values():
            value = c.get(key)
            mark = "" if passes is None or value is None else (" ✓" if passes(value) else " ✗")
            cells.append(_cell(value) + mark)
        row(label, target, cells)
    row("goals whose runs disagree", "", [str(c["disagreeing_goals"]) for c in columns.values()])
    kinds = sorted({k for c in columns.values() for k in c["sign_precision"]})
    for kind in kinds:
        cells = []
        for c in columns.values():
            s = c["sign_precision"].get(kind)
            cells.append(f"{_cell(s['precision'])} ({s['runs']})" if s else "-")
        row(f"  precision: {kind} (runs)", "", cells)
    sources = sorted({k for c in columns.values() for k in c["reference_sources"]})
    for source in sources:
        row(
            f"  references: {source}",
            "",
            [str(c["reference_sources"].get(source, 0)) for c in columns.values()],
        )
    row(
        "runs in no task / set aside",
        "",
        [f"{c['runs_in_no_task']} / {c['set_aside']}" for c in columns.values()],
    )
    row("forge time (s)", "", [_cell(c.get("seconds")) for c in columns.values()])
    header = ["figure", "target", *names]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(r)
        )
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
