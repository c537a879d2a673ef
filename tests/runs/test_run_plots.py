"""The run report drawn as SVG (pure): series, alarm marks, stable bytes, nothing external."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from judge_service.runs.plots import run_plots


def row(step: int | None, **values: Any) -> dict[str, Any]:
    base = {
        "step": step,
        "samples": 4,
        "valid": 4,
        "reward_mean": 0.5,
        "raw_reward_mean": 0.5,
        "hack_rate": 0.0,
        "hack_rate_by_kind": {},
        "agreement_mean": 1.0,
        "no_advantage_share": None,
    }
    return {**base, **values}


def markers(svg: str, gid: str) -> int:
    match = re.search(rf'<g id="{gid}">(.*?)</g>', svg, re.S)
    assert match, gid
    return match.group(1).count("<use ")


def test_series_follow_the_report_and_skip_missing_values():
    report = {
        "steps": [
            row(0, hack_rate_by_kind={}),
            row(1, hack_rate=0.25, hack_rate_by_kind={"edited_tests": 0.25}),
            row(2, no_advantage_share=0.5, agreement_mean=None),
            row(None),  # scored without a step: not on the curves
        ],
        "alarms": [],
    }
    plots = {p.name: p.svg for p in run_plots(report, kappa=[(1, -0.2)])}
    assert markers(plots["reward"], "reward-raw_reward") == 3
    assert markers(plots["hacks"], "hacks-kind-edited_tests") == 3  # 0 where the kind is absent
    assert markers(plots["agreement"], "agreement-agreement") == 2
    assert markers(plots["agreement"], "agreement-kappa") == 1
    assert markers(plots["no_advantage"], "no_advantage-no_advantage_share") == 1
    assert "edited_tests" in plots["hacks"]  # the legend is text, not paths
    assert not any("-alarm-" in svg for svg in plots.values())


def test_alarms_are_marked_on_the_curves_they_concern():
    steps = [row(s, raw_reward_mean=0.4 + 0.1 * s, hack_rate=0.1 * s) for s in range(3)]
    alarms = [{"kind": "reward_up_hacks_up", "message": "m"}, {"kind": "new_kind", "message": "m"}]
    plots = {p.name: p.svg for p in run_plots({"steps": steps, "alarms": alarms})}
    marked = {name for name, svg in plots.items() if 'id="' + name + "-alarm-reward_up" in svg}
    assert marked == {"reward", "hacks"}
    assert 'id="reward-alarm-new_kind"' in plots["reward"]  # an unknown kind: on the reward
    assert "alarm: reward up, hacks up" in plots["hacks"]


def test_the_same_report_draws_the_same_bytes_with_page_unique_ids_and_no_links():
    report = {"steps": [row(s, raw_reward_mean=0.1 * s) for s in range(5)], "alarms": []}
    first, second = run_plots(report), run_plots(report)
    assert [p.svg for p in first] == [p.svg for p in second]
    ids = Counter(i for p in first for i in re.findall(r' id="([^"]+)"', p.svg))
    assert ids and max(ids.values()) == 1
    for plot in first:
        assert plot.svg.startswith("<svg ") and plot.svg.rstrip().endswith("</svg>")
        assert "<script" not in plot.svg and "<metadata" not in plot.svg
        targets = re.findall(r'(?:href="|url\()([^")]+)', plot.svg)
        assert targets and all(t.startswith(f"#{plot.name}-") for t in targets)
        assert len(plot.svg) < 40_000  # text stays text: svg.fonttype none


def test_a_run_without_steps_says_so():
    plots = run_plots({"steps": [row(None)], "alarms": []})
    assert all("no data yet" in p.svg for p in plots)
