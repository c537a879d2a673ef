"""A world built from the retail corpus answers the runs it was not built from.

One run of every goal is held out (goals from the corpus's ground truth, which only this
test reads); the world is built from the rest and answers each held-out run's calls in order,
the state carried through, by paths (a)-(d) only. The exact-call replay cache is the
baseline. Also: the world package stays pure and knows no retail name.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from judge_service.traces.conversation import parse_traces
from judge_service.world.cli_show import print_world
from judge_service.world.fidelity import Fidelity, evaluate, hold_out, hold_out_tasks
from judge_service.world.job import build
from judge_service.world.model import Call
from judge_service.world.world import World
from tests.project.test_feature_rules import breaches
from tests.project.test_meta import imported_modules, of_package

ROOT = Path(__file__).resolve().parents[2]
RETAIL = ROOT / "data" / "retail"
PACKAGE = ROOT / "judge_service" / "world"
EPISODES = "judge_service.episodes"


@pytest.fixture(scope="module")
def retail() -> tuple[World, Fidelity, dict[str, list[str]]]:
    traces = parse_traces((RETAIL / "traces.jsonl").read_text(encoding="utf-8"))
    groups: dict[str, list[str]] = {}
    for line in (RETAIL / "truth.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        groups.setdefault(row["goal_id"], []).append(row["trace_id"])
    held = hold_out(groups)
    world, report = evaluate(traces, held)
    return world, report, held


def test_held_out_runs_are_answered_exactly_and_field_by_field(retail) -> None:
    _, report, held = retail
    assert len(held) == 80  # every goal has repeats
    figures = report.figures()
    print(json.dumps({k: v for k, v in figures.items() if k != "by_tool"}))
    assert report.world.calls > 500
    assert report.world.exact_rate >= 0.90
    assert report.world.f1 >= 0.97
    assert report.world.exact_rate > report.baseline.exact_rate
    assert report.ratio > 1.0


def test_every_path_but_the_model_answers_and_each_answer_is_right(retail) -> None:
    _, report, _ = retail
    for path in ("read", "transition", "function"):
        assert report.by_path[path].calls > 0, path
        assert report.by_path[path].exact_rate >= 0.95, path
    # every traced write is learned, so no held-out call is left to replay here (the replay
    # path is tested on the library world, tests/world/test_world_library.py)
    replayed = report.by_path.get("replay")
    assert replayed is None or replayed.exact_rate >= 0.95
    needed = report.by_path.get("model_needed")
    assert needed is None or needed.calls <= 0.05 * report.world.calls


def test_writes_are_learned_as_transitions_not_replayed(retail) -> None:
    world, report, _ = retail
    usable = [n for n, t in world.tools.items() if t.transition and t.transition.usable]
    traced = [n for n, t in world.tools.items() if t.effect == "write" and t.calls > t.errors_seen]
    # including the writes whose list entry depends on a sign (a payment or a refund of a
    # price difference) or copies the entity's own first entry
    assert sorted(usable) == sorted(traced)
    assert len(usable) >= 6
    for name in usable:
        assert report.by_tool[name].exact_rate >= 0.9, name


def test_the_retail_world_round_trips_through_json(retail) -> None:
    world, _, held = retail
    loaded = World.model_validate_json(world.model_dump_json())
    assert loaded == world
    trace_id = next(iter(held))
    state = loaded.task_state(held[trace_id])
    assert state == world.task_state(held[trace_id])
    call = Call(name="unknown_tool", arguments={})
    assert loaded.answer(state, call).path == "model_needed"


def test_one_run_of_each_goal_with_repeats_is_held_out() -> None:
    held = hold_out({"g1": ["a", "b", "c"], "g2": ["d"], "g3": ["e", "f"]})
    assert held == {"c": ["a", "b"], "f": ["e"]}
    tasks = [SimpleNamespace(trace_ids=["a", "b"]), SimpleNamespace(trace_ids=["b", "x"])]
    assert hold_out_tasks(tasks) == {"b": ["a"]}  # x would start from no run of its task


def test_the_worlds_pure_modules_are_pure_and_no_module_knows_a_retail_name() -> None:
    tools = json.loads((RETAIL / "tools.json").read_text(encoding="utf-8"))
    names = {t["function"]["name"] for t in tools} | {"retail", "data/retail"}
    # each module by its part (pure ones import no database, HTTP, queue or model); the
    # episodes over a world are held to the same, and the world imports nothing of them
    episodes = PACKAGE.parent / "episodes"
    assert breaches(PACKAGE, "world") == [] and breaches(episodes, "episodes") == []
    for path in sorted([*PACKAGE.glob("*.py"), *episodes.glob("*.py")]):
        text = path.read_text(encoding="utf-8")
        assert not [n for n in names if n in text], path.name
        assert len(text.splitlines()) < 250, path.name
        if path.parent == PACKAGE:
            assert not [m for m in imported_modules(path) if of_package(m, EPISODES)], path.name


def test_a_world_with_nothing_held_out_reports_no_rate_not_zero(capsys) -> None:
    """A job of one run a goal (production logs, telecom's runs) holds nothing out: its report
    says the rates were not measured (null, "-" in the CLI), where it said 0.0, which reads
    as a world that answers nothing right."""
    traces = parse_traces((RETAIL / "traces.jsonl").read_text(encoding="utf-8"))[:6]
    _, _, report = build(traces, {t.id: [t.id] for t in traces}, jobs=1)
    fidelity = report["fidelity"]
    assert fidelity["held_out_runs"] == 0 and fidelity["ratio"] is None
    assert fidelity["world"] == {"calls": 0, "answered": 0, "exact": None, "f1": None}
    print_world({"id": "w1", "name": "logs", "status": "done", **report})
    shown = capsys.readouterr().out
    assert "fidelity on 0 held-out runs" in shown and "ratio, exact (world / baseline): -" in shown
    assert "0.000" not in shown.split("by path")[0]
