"""A world's report as text: the counts, the fidelity beside the baseline, a line per path
and per tool (its paths' shares on the held-out calls), then the transitions learned."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

HEAD = f"{'':32} {'calls':>6} {'answd':>6} {'exact':>7} {'F1':>7}"


def _rate(value: float | None) -> str:
    """A rate in its column; ``-`` where nothing was measured (no call held out)."""
    return f"{value:>7.3f}" if value is not None else f"{'-':>7}"


def _row(label: str, score: Mapping[str, Any], base: Mapping[str, Any] | None = None) -> str:
    line = (
        f"{label[:32]:32} {score['calls']:>6} {score['answered']:>6} "
        f"{_rate(score['exact'])} {_rate(score['f1'])}"
    )
    if base is not None:
        line += f"   {base['answered']:>6} {_rate(base['exact'])} {_rate(base['f1'])}"
    return line


def _fidelity(fidelity: Mapping[str, Any], letters: Mapping[str, str]) -> None:
    typer.echo(
        f"\nfidelity on {fidelity['held_out_runs']} held-out runs, paths (a)-(d), no model\n"
        f"{HEAD}   {'cache':>6} {'exact':>7} {'F1':>7}   (cache: exact-call replay baseline)"
    )
    typer.echo(_row("world", fidelity["world"], fidelity["baseline"]))
    ratio = fidelity["ratio"]
    shown = f"{ratio:.3f}" if ratio is not None else "- (the baseline answered none exactly)"
    typer.echo(f"ratio, exact (world / baseline): {shown}")
    typer.echo("\nby path")
    order = sorted(fidelity["by_path"], key=lambda p: letters.get(p, "z"))
    for path in order:
        typer.echo(_row(f"({letters.get(path, '?')}) {path}", fidelity["by_path"][path]))


def _blank(name: str) -> str:
    """A tool no held-out call used: its name, the figures' columns left empty."""
    return f"{name[:32]:32} {'-':>6} {'':6} {'':7} {'':7}   {'-':>6} {'':7} {'':7}"


def _tools(tools: Mapping[str, Any], fidelity: Mapping[str, Any] | None, letters: Any) -> None:
    typer.echo("\nby tool (class, and each path's share of its held-out calls)")
    typer.echo(f"{HEAD}   {'cache':>6} {'exact':>7} {'F1':>7}")
    by_tool = (fidelity or {}).get("by_tool", {})
    for name, tool in tools.items():
        shares = " ".join(
            f"{letters.get(p, '?')}:{share:.2f}" for p, share in tool["paths"].items() if share
        )
        scores = by_tool.get(name)
        line = _row(name, scores["world"], scores["baseline"]) if scores else _blank(name)
        typer.echo(f"{line}   {tool['effect']} {shares}".rstrip())
    learned = [(name, e) for name, tool in tools.items() for e in tool.get("transitions", [])]
    if learned:
        typer.echo("\ntransitions learned (write tool: entity it changes: ops)")
    for name, effect in learned:
        binding = effect["entity"]
        source = binding.get("arg") or binding.get("via")
        entity = f"{binding.get('entity', '?')}=<{'a new id' if source == '@new' else source}>"
        ops = "; ".join(effect["ops"]) or "-"
        seen = f"{effect['examples']} examples, {effect['rejected']} rejected"
        typer.echo(f"  {name}: {entity}: {ops} ({seen})")


def print_world(detail: Mapping[str, Any]) -> None:
    counts = detail.get("counts") or {}
    typer.echo(f"world {detail['id']} ({detail['name']}): {detail['status']}")
    if detail.get("error"):
        typer.echo(f"error: {detail['error']}")
    if counts:
        typer.echo(", ".join(f"{k} {v}" for k, v in counts.items()))
    letters = detail.get("path_letters") or {}
    if detail.get("fidelity"):
        _fidelity(detail["fidelity"], letters)
    if detail.get("tools"):
        _tools(detail["tools"], detail.get("fidelity"), letters)
