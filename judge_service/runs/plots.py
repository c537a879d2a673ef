"""The run report drawn as inline SVG plots, one per signal (pure: report in, SVG text out).

matplotlib's SVG backend, used without pyplot (no GUI backend, no global figure state, safe
in threads). Text stays text (``svg.fonttype: none``), which keeps each plot a few KB and
lets the page's font draw the labels; the SVG carries no date and salts its ids with the
plot's name, so the same report draws the same bytes and two plots on a page share no id.
Every series is a ``<g id="{plot}-{series}">`` and every alarm marker
``<g id="{plot}-alarm-{kind}">``, which is what the tests look for.

What the curves must not say: a step without a value (null) is a gap in its line, never a
0 nor a straight line across; hack kinds wear their own marker and dash pattern, and where
two of them share a value they are drawn a point or two apart (the plot's note says so), so
four kinds in the legend are four lines on the plot.
"""

from __future__ import annotations

import io
import math
import re
import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import offset_copy

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

INK, MUTED, GRID, ALARM = "#1d2330", "#5d6677", "#dde1e8", "#b3261e"
KIND_COLOURS = ("#9a6700", "#7b3fb0", "#0f7c8c", "#c2185b", "#5d6677", "#2e7d32", "#ef6c00")
KIND_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
KIND_DASHES = ((6, 2), (2, 2), (6, 2, 1, 2), (1, 1), (4, 1, 1, 1, 1, 1), (8, 3), (3, 1))
KIND_OFFSET_PT = 2.5  # how far apart kinds that share a value are drawn, in points
#: Which curves each alarm kind of :func:`judge_service.runs.report.alarms` concerns.
ALARM_SERIES = {
    "reward_up_hacks_up": (("reward", "raw_reward"), ("hacks", "hack_rate")),
    "reward_up_agreement_down": (("reward", "raw_reward"), ("agreement", "agreement")),
}
ALARM_LABEL = {
    "reward_up_hacks_up": "alarm: reward up, hacks up",
    "reward_up_agreement_down": "alarm: reward up, agreement down",
}
MARGINS = {"left": 0.11, "right": 0.985, "top": 0.97, "bottom": 0.16}
MARKERS_UP_TO = 60  # points per series drawn with a marker; a long run is a plain line
#: rcParams are process-wide and ``rc_context`` sets them for the duration of a draw, so two
#: pages drawn at once in the API's thread pool would mix their settings: one draw at a time.
_DRAWING = threading.Lock()
NO_METADATA = ("Creator", "Date", "Format", "Type")  # no date, no links to matplotlib.org
STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.edgecolor": GRID,
    "axes.labelcolor": MUTED,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    svg: str
    note: str = ""  # said under the plot: what it draws other than as the data has it


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    points: list[tuple[float, float]]  # y is NaN where the step has no value: a gap
    colour: str
    width: float = 2.0
    dashed: bool = False
    on_top: bool = False
    marker: str = "o"
    dashes: tuple[float, ...] | None = None  # a pattern of its own (``dashed`` is "--")
    offset_pt: float = 0.0  # drawn this many points above its values


def _value(value: Any) -> float:
    """A float, NaN for a missing or non-finite one (matplotlib breaks the line there)."""
    return float(value) if value is not None and math.isfinite(float(value)) else math.nan


def _points(steps: Sequence[dict[str, Any]], key: str) -> list[tuple[float, float]]:
    return [(float(row["step"]), _value(row.get(key))) for row in steps]


def _finite(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(x, y) for x, y in points if math.isfinite(y)]


def _kinds_apart(kinds: list[Series]) -> tuple[list[Series], str]:
    """The kind series drawn apart, and the note saying so, when two share a value at a
    step; as they are, with no note, otherwise."""
    seen: set[tuple[float, float]] = set()
    shared = False
    for s in kinds:
        values = set(_finite(s.points))
        shared = shared or bool(values & seen)
        seen |= values
    if not shared:
        return kinds, ""
    middle = (len(kinds) - 1) / 2
    apart = [replace(s, offset_pt=(i - middle) * KIND_OFFSET_PT) for i, s in enumerate(kinds)]
    return apart, (
        f"Kinds with equal values are drawn {KIND_OFFSET_PT:g} pt apart so each stays "
        "visible; the table below has the exact figures."
    )


def _integer_steps(axes: Axes) -> None:
    """Ticks on whole steps only: the default locator (an ``AutoLocator``, a kind of
    ``MaxNLocator``) told so."""
    locator = axes.xaxis.get_major_locator()
    if isinstance(locator, MaxNLocator):
        locator.set_params(integer=True)


def _draw(
    name: str,
    series: Iterable[Series],
    *,
    ylabel: str,
    ylim: tuple[float, float] | None,
    alarms: Sequence[tuple[str, str]],
    last_step: float,
    empty: str = "no data yet",
) -> str:
    """One figure; ``alarms`` are ``(kind, series key)`` marked at the series' latest value;
    ``empty`` is said when no series has a value."""
    with _DRAWING, rc_context({**STYLE, "svg.hashsalt": name}):
        figure = Figure(figsize=(5.4, 2.7))
        axes: Axes = figure.subplots(gridspec_kw=MARGINS)  # fixed: a layout engine doubles the time
        drawn: dict[str, list[tuple[float, float]]] = {}
        for s in series:
            finite = _finite(s.points)
            if not finite:
                continue
            xs, ys = zip(*s.points, strict=True)
            (line,) = axes.plot(
                xs,
                ys,
                color=s.colour,
                linewidth=s.width,
                linestyle="--" if s.dashed else "-",
                marker=s.marker if len(s.points) <= MARKERS_UP_TO else None,
                markersize=3.5,
                label=s.label,
                zorder=3 if s.on_top else 2,
            )
            if s.dashes is not None:
                line.set_dashes(s.dashes)
            if s.offset_pt:  # after plotting, so the limits still come from the values
                line.set_transform(
                    offset_copy(axes.transData, fig=figure, y=s.offset_pt, units="points")
                )
            line.set_gid(f"{name}-{s.key}")
            drawn[s.key] = finite
        if ylim is not None:
            ys_drawn = [y for pts in drawn.values() for _, y in pts]
            low, high = min([ylim[0], *ys_drawn]), max([ylim[1], *ys_drawn])
            axes.set_ylim(low - 0.05 * (high - low), high + 0.12 * (high - low))
        for stacked, (kind, key) in enumerate(alarms):
            points = drawn.get(key)
            if not points:
                continue
            x, y = points[-1]
            (ring,) = axes.plot(
                [x], [y], marker="o", markersize=11, markerfacecolor="none",
                markeredgecolor=ALARM, markeredgewidth=2, linestyle="none",
            )  # fmt: skip
            ring.set_gid(f"{name}-alarm-{kind}")
            axes.annotate(
                ALARM_LABEL.get(kind, f"alarm: {kind}"),
                (x, y),
                xytext=(-6, 10 + 12 * stacked),
                textcoords="offset points",
                ha="right",
                color=ALARM,
                fontsize=8,
                fontweight="bold",
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
            )
        if alarms:
            axes.axvline(last_step, color=ALARM, linestyle=":", linewidth=1)
        axes.set_xlabel("step")
        axes.set_ylabel(ylabel)
        axes.grid(True, color=GRID, linewidth=0.6)
        _integer_steps(axes)
        if drawn:
            axes.legend(loc="best", fontsize=8, frameon=False)
        else:
            axes.text(0.5, 0.5, empty, ha="center", va="center", color=MUTED,
                      transform=axes.transAxes)  # fmt: skip
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(NO_METADATA))
    return _inline(buffer.getvalue(), name)


def _inline(svg: str, name: str) -> str:
    """The ``<svg>`` element alone (no XML prologue), labelled for screen readers, with every
    id (and every reference to one) under the plot's name: four plots share one page, and
    matplotlib numbers its groups from 1 in each (``figure_1``, ``line2d_1``...)."""
    body = svg[svg.index("<svg") :]
    body = re.sub(rf'id="(?!{name}-)([^"]+)"', rf'id="{name}-\1"', body)
    body = re.sub(rf'href="#(?!{name}-)([^"]+)"', rf'href="#{name}-\1"', body)
    body = re.sub(rf"url\(#(?!{name}-)([^)]+)\)", rf"url(#{name}-\1)", body)
    return body.replace("<svg ", f'<svg role="img" aria-labelledby="plot-{name}-title" ', 1)


def _alarms_for(plot: str, alarms: Sequence[dict[str, str]]) -> list[tuple[str, str]]:
    marks = []
    for alarm in alarms:
        for target, key in ALARM_SERIES.get(alarm["kind"], (("reward", "raw_reward"),)):
            if target == plot:
                marks.append((alarm["kind"], key))
    return marks


def run_plots(
    report: dict[str, Any],
    kappa: Sequence[tuple[int, float]] = (),
    *,
    one_judge: Collection[int] = (),
) -> list[Plot]:
    """The four plots of a run report (rows without a step are left out); ``kappa`` is
    ``(step, Cohen's kappa of the final reward against human labels)`` where there are labels;
    ``one_judge`` are the steps scored by a one-judge panel, whose agreement (1 by
    definition) is not drawn."""
    steps = [row for row in report["steps"] if row["step"] is not None]
    notes: dict[str, str] = {}
    empty = dict.fromkeys(("reward", "hacks", "agreement", "no_advantage"), "no data yet")
    alone = [str(row["step"]) for row in steps if row["step"] in one_judge]
    if alone:
        every = len(alone) == len(steps)
        where = "" if every else f" at step {', '.join(alone)}"
        notes["agreement"] = (
            f"One judge on the panel{where}: agreement is 1 by definition, not drawn."
        )
        if every:
            empty["agreement"] = "one judge: no agreement"
    alarms = report.get("alarms", [])
    last = float(steps[-1]["step"]) if steps else 0.0
    kinds = sorted({kind for row in steps for kind in row["hack_rate_by_kind"]})
    by_kind, apart = _kinds_apart(
        [
            Series(
                f"kind-{kind}",
                kind,
                # a step's samples with no finding of this kind: a true 0
                [(float(r["step"]), _value(r["hack_rate_by_kind"].get(kind, 0.0))) for r in steps],
                KIND_COLOURS[i % len(KIND_COLOURS)],
                width=1.3,
                marker=KIND_MARKERS[i % len(KIND_MARKERS)],
                dashes=KIND_DASHES[i % len(KIND_DASHES)],
            )
            for i, kind in enumerate(kinds)
        ]
    )
    if apart:
        notes["hacks"] = apart
    specs: list[tuple[str, str, str, list[Series], tuple[float, float] | None]] = [
        (
            "reward",
            "Reward: raw (panel) against penalised",
            "mean reward",
            [
                Series("raw_reward", "raw reward", _points(steps, "raw_reward_mean"), "#2f5bd3"),
                Series("reward", "penalised reward", _points(steps, "reward_mean"), "#1d7a46"),
            ],
            (0.0, 1.0),
        ),
        (
            "hacks",
            "Hack rate, overall and by kind",
            "share flagged",
            [
                Series(
                    "hack_rate", "all kinds", _points(steps, "hack_rate"), ALARM, 2.6, on_top=True
                ),
                *by_kind,
            ],
            (0.0, 1.0),
        ),
        (
            "agreement",
            "Judge agreement, and κ against human labels",
            "agreement / κ",
            [
                Series(
                    "agreement",
                    "panel agreement",
                    [
                        (x, math.nan if x in one_judge else y)
                        for x, y in _points(steps, "agreement_mean")
                    ],
                    INK,
                ),
                Series(
                    "kappa",
                    "κ vs human labels",
                    [(float(s), float(k)) for s, k in kappa],
                    "#ef6c00",
                    dashed=True,
                ),
            ],
            (0.0, 1.0),
        ),
        (
            "no_advantage",
            "GRPO groups with no advantage",
            "share of groups",
            [
                Series(
                    "no_advantage_share",
                    "groups with equal rewards",
                    _points(steps, "no_advantage_share"),
                    "#7b3fb0",
                )
            ],
            (0.0, 1.0),
        ),
    ]
    return [
        Plot(
            name,
            title,
            _draw(
                name,
                series,
                ylabel=ylabel,
                ylim=ylim,
                alarms=_alarms_for(name, alarms),
                last_step=last,
                empty=empty[name],
            ),
            notes.get(name, ""),
        )
        for name, title, ylabel, series, ylim in specs
    ]


#: The difficulty tiers of :mod:`judge_service.forge.tiers`, bottom to top, with their colours.
TIER_COLOURS = {"too_easy": "#2f5bd3", "learnable": "#1d7a46", "too_hard": "#b3261e"}


def tier_plot(shares: dict[int, dict[str, float]]) -> Plot:
    """Per step, the share of the step's tasks in each tier, stacked to 1; each bar is a
    ``<g id="tiers-{tier}-{step}">``. ``shares`` is ``tier_shares``' answer."""
    name = "tiers"
    steps = sorted(shares)
    with _DRAWING, rc_context({**STYLE, "svg.hashsalt": name}):
        figure = Figure(figsize=(5.4, 2.7))
        axes: Axes = figure.subplots(gridspec_kw=MARGINS)
        bottom = [0.0] * len(steps)
        for tier, colour in TIER_COLOURS.items():
            heights = [float(shares[s].get(tier, 0.0)) for s in steps]
            bars = axes.bar(steps, heights, bottom=bottom, color=colour, label=tier, width=0.8)
            for step, bar in zip(steps, bars.patches, strict=True):
                bar.set_gid(f"{name}-{tier}-{step}")
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        axes.set_ylim(0.0, 1.25)
        axes.set_xlabel("step")
        axes.set_ylabel("share of tasks")
        axes.grid(True, axis="y", color=GRID, linewidth=0.6)
        axes.set_axisbelow(True)
        _integer_steps(axes)
        if steps:
            axes.legend(loc="upper center", ncol=3, fontsize=8, frameon=False)
        else:
            axes.text(0.5, 0.5, "no data yet", ha="center", va="center", color=MUTED,
                      transform=axes.transAxes)  # fmt: skip
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(NO_METADATA))
    return Plot(name, "Task difficulty tiers per step", _inline(buffer.getvalue(), name))
