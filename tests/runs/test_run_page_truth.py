"""The run page tells the truth (issue 37): hack kinds with equal values are four visible
lines, a step without a value is a gap in its line (never a 0 nor a line across it), and a
one-judge panel's agreement (1 by definition) is neither drawn nor shown as a number.

The runs are written straight into storage, as the worker would leave them, so the kinds,
values and panels are exactly the ones the checks need.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from judge_service.core.batch_plan import BatchPlan, JudgeEntry
from judge_service.core.storage.db import session_scope
from judge_service.domain import Finding, Outcome, Verdict
from judge_service.runs.plots import run_plots
from judge_service.scoring import store_batches as batches
from judge_service.scoring.store_results import ScoredSample, save_results
from tests.runs.test_run_page import plots_of, series_points

KINDS = ("edited_tests", "judge_injection", "hardcoded_output", "skipped_checks")
FLAGGED = (1, 2, 2, 3)  # samples per step with all four kinds (and one more flagged)
NULL_STEP = 1  # its samples have no group: no GRPO group, no no-advantage share


def stored_run(url: str, run_id: str, *, judges: int = 2) -> None:
    """Four steps of eight samples scored by a panel of ``judges``; every kind has the same
    hack rate at every step, and step ``NULL_STEP`` has no no-advantage share (null)."""
    for step, flagged in enumerate(FLAGGED):
        with session_scope(url) as session:
            batch = batches.create_batch(
                session=session,
                batch_id=f"{run_id[:20]}{step:012d}",
                samples=[
                    {
                        "id": f"s{i}",
                        "prompt": "Fix the bug",
                        "completion": "done",
                        **({} if step == NULL_STEP else {"group_id": f"g{i // 2}"}),
                    }
                    for i in range(8)
                ],
                plan=BatchPlan(judges=[JudgeEntry(name=f"j{j}") for j in range(judges)]),
                request_hash="h",
                timeout_s=60,
                run_id=run_id,
                step=step,
            )
            session.flush()
            scored = []
            for row in batch.samples:
                i = row.position
                reward = 0.5 if i < 2 else 0.2 + 0.3 * (i % 2)  # group g0 has no advantage
                outcome = Outcome(
                    id=row.external_id,
                    reward=reward,
                    raw_reward=reward,
                    valid=True,
                    hack_score=0.9 if i <= flagged else 0.0,  # one more: the overall rate
                    agreement=1.0 if judges == 1 else 0.8,
                    judges=[Verdict(judge=f"j{j}", score=reward) for j in range(judges)],
                    findings=[
                        Finding(detector="d", kind=k, severity="high", confidence=0.9, evidence="e")
                        for k in KINDS
                    ]
                    if i < flagged
                    else [],
                )
                scored.append(ScoredSample(row.id, row.position, outcome))
            save_results(session=session, batch_id=batch.id, scored=scored)
            session.flush()
            batches.finish_if_complete(session=session, batch_id=batch.id)


def series(svg: str, gid: str) -> str:
    match = re.search(rf'<g id="{gid}">(.*?)</g>\s*(?:<g id=|</g>)', svg, re.S)
    assert match, f"no series {gid}"
    return match.group(1)


def line_path(svg: str, gid: str) -> list[list[tuple[float, float]]]:
    """The series' line as its sub-paths (a new ``M`` starts one), each a list of vertices."""
    d = re.search(r'<path d="([^"]*)"', series(svg, gid)).group(1)  # type: ignore[union-attr]
    parts = []
    for command, x, y in re.findall(r"([ML]) ([-\d.]+) ([-\d.]+)", d):
        if command == "M":
            parts.append([])
        parts[-1].append((float(x), float(y)))
    return parts


def style_of(svg: str, gid: str) -> tuple[str, str]:
    """``(stroke-dasharray, marker path)`` of the series: what tells it from the others."""
    body = series(svg, gid)
    dashes = re.search(r"stroke-dasharray: ([^;]+);", body)
    marker = re.search(r'<path id="[^"]+" d="([^"]+)"', body)
    return (dashes.group(1) if dashes else "solid", marker.group(1) if marker else "")


def test_four_equal_kinds_are_four_distinct_visible_lines(
    client: TestClient, keys, embedded_settings
):
    stored_run(embedded_settings.database_url, "equal-kinds")
    report = client.get("/v1/runs/equal-kinds/report", headers=keys["reviewer"]).json()
    by_kind = [row["hack_rate_by_kind"] for row in report["steps"]]
    assert all(len(set(row.values())) == 1 and len(row) == 4 for row in by_kind)  # all equal

    html = client.get("/runs/equal-kinds", headers=keys["reviewer"]).text
    hacks = plots_of(html)["hacks"]
    gids = [f"hacks-kind-{k}" for k in sorted(KINDS)]
    assert len({style_of(hacks, gid) for gid in gids}) == 4  # own dash pattern and marker each
    assert all(series_points(hacks, gid) == 4 for gid in gids)
    # Drawn apart: at each step the four lines are at four different heights.
    heights = [[y for part in line_path(hacks, gid) for _, y in part] for gid in gids]
    for at_step in zip(*heights, strict=True):
        assert len({round(y, 2) for y in at_step}) == 4, at_step
    note = re.search(r'<figcaption class="muted" data-note="hacks">([^<]*)<', html)
    assert note and "apart" in note.group(1)


def test_a_null_step_is_a_gap_not_a_zero(client: TestClient, keys, embedded_settings):
    stored_run(embedded_settings.database_url, "null-step")
    report = client.get("/v1/runs/null-step/report", headers=keys["reviewer"]).json()
    shares = [row["no_advantage_share"] for row in report["steps"]]
    assert shares[NULL_STEP] is None and shares.count(None) == 1

    html = client.get("/runs/null-step", headers=keys["reviewer"]).text
    svg = plots_of(html)["no_advantage"]
    gid = "no_advantage-no_advantage_share"
    assert series_points(svg, gid) == 3  # no marker for the null step
    parts = line_path(svg, gid)
    assert [len(p) for p in parts] == [1, 2]  # step 0 alone, then steps 2-3: a break at 1
    xs = [x for part in parts for x, _ in part]
    gap = xs[0] + (xs[1] - xs[0]) / 2  # step 1 lies halfway between steps 0 and 2
    assert all(abs(x - gap) > 1 for x in xs)  # no vertex at the null step, at 0 or anywhere
    (first,), (second, third) = parts
    assert first[1] == second[1] == third[1]  # the other steps' share (1/4) is where it was


def test_nulls_break_every_series_of_the_report():
    steps = [
        {
            "step": s,
            "raw_reward_mean": None if s == 2 else 0.5,
            "reward_mean": None if s == 2 else 0.4,
            "hack_rate": 0.1,
            "hack_rate_by_kind": {},
            "agreement_mean": None if s == 2 else 0.9,
            "no_advantage_share": None if s == 2 else 0.2,
        }
        for s in range(5)
    ]
    plots = {p.name: p.svg for p in run_plots({"steps": steps, "alarms": []})}
    for plot, key in (
        ("reward", "raw_reward"),
        ("reward", "reward"),
        ("agreement", "agreement"),
        ("no_advantage", "no_advantage_share"),
    ):
        parts = line_path(plots[plot], f"{plot}-{key}")
        assert [len(p) for p in parts] == [2, 2], (plot, key)
        assert series_points(plots[plot], f"{plot}-{key}") == 4


def test_a_one_judge_run_shows_no_agreement(client: TestClient, keys, embedded_settings):
    stored_run(embedded_settings.database_url, "one-judge", judges=1)
    html = client.get("/runs/one-judge", headers=keys["reviewer"]).text
    tile = re.search(r'<div class="muted">agreement</div>(.*?)</div></div>', html, re.S).group(1)  # type: ignore[union-attr]
    assert "one judge" in tile and "1.000" not in tile
    agreement = plots_of(html)["agreement"]
    assert 'id="agreement-agreement"' not in agreement and "one judge: no agreement" in agreement
    assert 'data-note="agreement"' in html
    steps = re.search(r"<summary>Figures per step</summary>(.*?)</details>", html, re.S).group(1)  # type: ignore[union-attr]
    assert steps.count("one judge") == 4 and "1.000" not in steps

    stored_run(embedded_settings.database_url, "two-judges", judges=2)
    two = client.get("/runs/two-judges", headers=keys["reviewer"]).text
    assert (
        "one judge" not in two
        and series_points(plots_of(two)["agreement"], "agreement-agreement") == 4
    )


def test_one_judge_steps_are_gaps_in_a_mixed_run():
    steps = [
        {
            "step": s,
            "hack_rate": 0.0,
            "hack_rate_by_kind": {},
            "agreement_mean": 1.0 if s < 2 else 0.7,
        }
        for s in range(4)
    ]
    (agreement,) = [
        p for p in run_plots({"steps": steps}, one_judge={0, 1}) if p.name == "agreement"
    ]
    assert [len(p) for p in line_path(agreement.svg, "agreement-agreement")] == [2]  # steps 2-3
    assert agreement.note.startswith("One judge on the panel at step 0, 1:")
