"""The world on domains where the user has tools: each run against its own task.

τ²-bench's telecom runs (``data/real_traces/telecom_*.jsonl``) have one run per goal, so no
run can be held out; and the user acts on their own phone, so most writes are the user's.
This measures what a world learns of that, from all runs, with each run's environment
reward as the label (the service never reads it):

- ``verify``: each run's recorded trajectory against the reference of the task the forge put
  it in; balanced accuracy against the reward, an undetermined verdict counted as wrong;
- ``episodes``: each run's own agent messages played as an episode of its task, against its
  own replayed user, who uses their tools as the agent asks
  (:mod:`judge_service.episodes.user_tools`); balanced accuracy of the episode's reward, and
  the user's calls made against those traced;
- the baseline, in the same run: the same episodes with a user who never uses their tools
  (the world before the user's side was learned);
- the user's reads in those episodes answered as the run's own user saw them: as built,
  without the tie that goes to the task's own runs (as for a run the world has not seen),
  and without the side's entity too (only the writes made before choose the answer);
- the engine's time per user-reply step (median ms), with the user's tools and without
  them, in the same run (the service's CPU per step is ``bench/episodes.py``'s).

Runs whose task holds other goals' runs too (the forge merged them; see its issue) take
that task's reference, right or wrong for them: the figure counts them as they are.

    .venv/bin/python bench/world_own_runs.py [--domain telecom]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from judge_service.episodes import step as engine
from judge_service.episodes.episode import act, finish, script_for, start
from judge_service.forge.trace_tasks import TraceTask, forge_traces
from judge_service.traces.calls import tool_calls
from judge_service.traces.conversation import Trace, parse_traces
from judge_service.world import user_side
from judge_service.world.build import build_world
from judge_service.world.verify import verify
from judge_service.world.world import World

REAL = Path(__file__).resolve().parents[1] / "data" / "real_traces"


def task_fields(task: TraceTask, task_id: str | None = None) -> dict[str, Any]:
    """A forge task as the service hands it to :func:`script_for` (its id: ``task_id``,
    else its first run's)."""
    first, agreed = task.first, task.consensus
    assert agreed is not None
    return {
        "id": task_id or first.trace_id,
        "goal": task.line(),
        "end_state": agreed.reference,
        "end_state_source": agreed.source,
        "end_states": [c.as_dict() for c in agreed.candidates],
        "source": {
            "trace_id": first.trace_id,
            "turn": first.turn,
            "traces": task.trace_ids,
            "request": first.request,
            "evidence": task.evidence(),
        },
        "prompt": first.prompt,
        "tools": first.tools,
    }


def balanced_accuracy(pairs: Sequence[tuple[bool, float | None]]) -> float:
    """Of (passed, reward) pairs; an undetermined reward (None) is wrong either way."""
    good = [r == 1.0 for p, r in pairs if p]
    bad = [r == 0.0 for p, r in pairs if not p]
    rates = [sum(x) / len(x) for x in (good, bad) if x]
    return sum(rates) / len(rates) if rates else 0.0


def _policy(trace: Trace) -> list[dict[str, Any]]:
    opening = next(i for i, m in enumerate(trace.messages) if m.get("role") == "user")
    return [
        {k: m[k] for k in ("content", "tool_calls") if m.get(k) is not None}
        for m in trace.messages[opening + 1 :]
        if m.get("role") == "assistant"
    ]


#: Seconds of engine time (``act``) of the text steps, the ones the user answers.
REPLY_SECONDS: list[float] = []


def play(world: World, task: dict[str, Any], traces: dict[str, Trace], trace: Trace):
    script = script_for(task, traces, seed=task["source"]["traces"].index(trace.id))
    episode, _ = start(world, script)
    for action in _policy(trace):
        if episode.done:
            break
        began = time.perf_counter()
        episode, _ = act(world, script, episode, action)
        if not action.get("tool_calls"):
            REPLY_SECONDS.append(time.perf_counter() - began)
    return finish(world, script, episode).reward, episode


def reply_ms(world: World, forged: Any, by_id: dict[str, Trace]) -> dict[str, float]:
    """The engine's time per user-reply step (the user's tools looked for, called and
    answered), beside the same steps with a user who never uses their tools, in one run:
    median milliseconds over 3 rounds of every run's text steps."""
    times: dict[str, float] = {}
    for label, patch in (("with_tools", contextlib.nullcontext()), ("without", _no_user_tools())):
        with patch:
            rounds = []
            for _ in range(3):
                REPLY_SECONDS.clear()
                for task in forged.tasks:
                    for trace_id in task.trace_ids:
                        play(world, task_fields(task), by_id, by_id[trace_id])
                rounds.append(statistics.median(REPLY_SECONDS) * 1000)
        times[label] = round(statistics.median(rounds), 3)
    times["ratio"] = round(times["with_tools"] / times["without"], 2)
    return times


def measure(domain: str) -> dict[str, Any]:
    rows = [
        json.loads(line)
        for path in sorted(REAL.glob(f"{domain}_*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    ]
    passed = {r["id"]: r["metadata"]["reward"] >= 1 for r in rows}
    bare = "\n".join(json.dumps({"id": r["id"], "messages": r["messages"]}) for r in rows)
    traces = parse_traces(bare)
    by_id = {t.id: t for t in traces}
    world = build_world(traces)
    forged = forge_traces(traces)
    verified, played, baseline = [], [], []
    made = traced = 0
    for task in forged.tasks:
        fields = task_fields(task)
        for trace_id in task.trace_ids:
            trace = by_id[trace_id]
            start_state = world.task_state(task.trace_ids)
            verdict, _ = verify(world, start_state, trace.messages, fields["end_state"])
            verified.append((passed[trace_id], verdict.reward))
            reward, episode = play(world, fields, by_id, trace)
            played.append((passed[trace_id], reward))
            made += sum(1 for a in episode.answers if a.get("by") == "user")
            traced += sum(
                len(m.get("tool_calls") or []) for m in trace.messages if m.get("role") == "user"
            )
            with _no_user_tools():
                reward, _ = play(world, fields, by_id, trace)
            baseline.append((passed[trace_id], reward))
    users = sorted(n for n, t in world.tools.items() if t.caller == "user")
    reads = _side_reads(world, forged, by_id)
    timing = reply_ms(world, forged, by_id)
    return {
        "runs": len(rows),
        "user_tools": len(users),
        "verify_balanced_accuracy": round(balanced_accuracy(verified), 3),
        "episodes_balanced_accuracy": round(balanced_accuracy(played), 3),
        "baseline_episodes_balanced_accuracy": round(balanced_accuracy(baseline), 3),
        "successful_runs_reaching_reference": _reached(played),
        "baseline_successful_runs_reaching_reference": _reached(baseline),
        "user_calls_made": made,
        "user_calls_traced": traced,
        "user_reads_as_traced": reads,
        "user_reply_step_ms": timing,
    }


def _read_fidelity(world: World, forged: Any, by_id: dict[str, Trace]) -> tuple[float, int]:
    """The share of the user's reads in the episodes answered with an answer that the run's
    own user got from that tool, and how many there were."""
    good = total = 0
    for task in forged.tasks:
        fields = task_fields(task)
        for trace_id in task.trace_ids:
            seen: dict[str, set[str | None]] = {}
            for call in tool_calls(by_id[trace_id], ("user",)):
                seen.setdefault(call.name, set()).add(call.answer)
            _, episode = play(world, fields, by_id, by_id[trace_id])
            for record in episode.answers:
                read = record.get("by") == "user" and not record.get("write")
                if read and record["tool"] in seen:
                    total += 1
                    good += record["answer"] in seen[record["tool"]]
    return round(good / total, 3) if total else 0.0, total


def _side_reads(world: World, forged: Any, by_id: dict[str, Trace]) -> dict[str, Any]:
    """The user's reads answered as the run's own user saw them: as built; without the tie
    that goes to the task's own runs (as for a run the world has not seen); and without the
    side's entity too (only the writes before)."""
    built, calls = _read_fidelity(world, forged, by_id)
    plain = engine.Step.user_call
    with mock.patch.object(
        engine.Step, "user_call", lambda self, name, args, runs: plain(self, name, args, [])
    ):
        unseen, _ = _read_fidelity(world, forged, by_id)
        with mock.patch.object(user_side, "_agreement", lambda seen, now: 0.0):
            blind, _ = _read_fidelity(world, forged, by_id)
    return {"calls": calls, "as_built": built, "no_own_runs": unseen, "no_own_runs_no_side": blind}


def _reached(pairs: Sequence[tuple[bool, float | None]]) -> str:
    good = [r for p, r in pairs if p]
    return f"{sum(r == 1.0 for r in good)} of {len(good)}"


def _no_user_tools() -> Any:
    nothing: Callable[..., Any] = lambda *args, **kwargs: []  # noqa: E731
    return mock.patch.multiple(engine, named_tools=nothing, traced_act=lambda *a, **k: None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="telecom")
    args = parser.parse_args()
    figures = measure(args.domain)
    print(json.dumps({"domain": args.domain, **figures}, indent=2))
    ratio = figures["episodes_balanced_accuracy"] / (
        figures["baseline_episodes_balanced_accuracy"] or 1e-9
    )
    print(f"episodes BA, user with tools / without: {ratio:.2f}x")


if __name__ == "__main__":
    main()
