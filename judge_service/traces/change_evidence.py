"""The evidence the traces give of which tools change state (step 3 of
:mod:`judge_service.traces.effects`): changes of a record between two observations, views of
text answers, and the objects a call made. It counts; :mod:`~judge_service.traces.effects`
decides."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.entities import answer_entities, canonical, entity_key, id_arguments


@dataclass
class Evidence:
    """Per tool, the changes and the unchanged observations counted for it."""

    changed: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    #: Changes counted for none (:func:`trace_evidence`), each as the call that showed the new
    #: state, having named the entity itself, and the tools called since the state before.
    unexplained: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def add(self, counts: dict[str, int], tool: str) -> None:
        counts[tool] = counts.get(tool, 0) + 1


def trace_evidence(calls: Sequence[ToolCall], evidence: Evidence) -> None:
    """Count one trace's evidence into ``evidence`` (the rules of step 3 of
    :mod:`judge_service.traces.effects`)."""
    seen: dict[str, str] = {}  # entity key -> canonical last state
    last: dict[str, Any] = {}  # entity key -> last state
    seen_at: dict[str, int] = {}  # entity key -> position of the call that showed it last
    since: dict[str, list[ToolCall]] = {}  # entity key -> calls naming it since that state
    done = [c for c in calls if not c.error]
    views: dict[str, tuple[str, int]] = {}  # a call's name and arguments -> its last answer
    for position, call in enumerate(done):
        states = answer_entities(call)
        shown = {key for key, _ in states}
        for key, state in states:
            now = canonical(state)
            between = [c for c in since.get(key, []) if c.index != call.index]
            if key in seen and seen[key] != now:
                if between:
                    evidence.add(evidence.changed, between[-1].name)
                elif seen_at[key] == position - 1:
                    evidence.add(evidence.changed, call.name)
                elif _field_changed(last[key], state) and key in {
                    entity_key(n, v) for n, v in id_arguments(call)
                }:
                    others = frozenset(c.name for c in done[seen_at[key] + 1 : position])
                    evidence.unexplained.append((call.name, others))
            elif key in seen:
                for tool in {c.name for c in between} | {call.name}:
                    evidence.add(evidence.unchanged, tool)
            seen[key], seen_at[key], since[key], last[key] = now, position, [], state
        for name, value in id_arguments(call):
            key = entity_key(name, value)
            if key not in shown:
                since.setdefault(key, []).append(call)
        if not states and call.answer:
            _view_evidence(call, position, done, views, evidence)


def _view_evidence(
    call: ToolCall,
    position: int,
    done: Sequence[ToolCall],
    views: dict[str, tuple[str, int]],
    evidence: Evidence,
) -> None:
    """Evidence from an answer that shows no record (a device's "Airplane mode is OFF"):
    the same call answered otherwise than last time changed, with one call between them,
    by that call, or, with none, by itself; answered alike, it changed nothing."""
    view = f"{call.name}({canonical(call.arguments)})"
    answer = (call.answer or "").strip()
    if view in views:
        before, at = views[view]
        if before == answer:
            evidence.add(evidence.unchanged, call.name)
        elif at == position - 1:
            evidence.add(evidence.changed, call.name)
        elif at == position - 2:
            evidence.add(evidence.changed, done[position - 1].name)
    views[view] = (answer, position)


def _loose(value: Any) -> Any:
    """``value`` with numbers as floats, however written (``3.2``, ``"3.2"``, ``0`` and
    ``0.0`` are one value): two tools may show one field in other types."""
    if isinstance(value, dict):
        return {k: _loose(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_loose(v) for v in value]
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _field_changed(before: Any, after: Any) -> bool:
    """Whether a field both states show holds another value: two reads of one record that
    show other fields of it, or the same in other types (a line's details, then its data
    usage), changed nothing."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return canonical(_loose(before)) != canonical(_loose(after))
    shared = before.keys() & after.keys()
    return any(canonical(_loose(before[k])) != canonical(_loose(after[k])) for k in shared)


def _made(call: ToolCall) -> str | None:
    """The key of the one object a call answered, when no argument holds its id (``None``
    otherwise): with the same arguments, a read finds the same such object again, a call
    that creates makes another each time."""
    if call.error or not isinstance(call.payload, dict):
        return None
    states = answer_entities(call)
    if len(states) != 1:
        return None
    key = states[0][0]
    return None if key.split("=", 1)[1] in {v for _, v in id_arguments(call)} else key


def creations(calls: Iterable[ToolCall], evidence: Evidence) -> None:
    """A change for each set of arguments that a tool answered with different new objects
    (an ``open_ticket`` of the same subject giving ``TK-1`` in one run, ``TK-7`` in another)."""
    made: dict[tuple[str, str], set[str]] = {}
    for call in calls:
        key = _made(call)
        if key is not None:
            made.setdefault((call.name, canonical(call.arguments)), set()).add(key)
    for (tool, _), keys in made.items():
        if len(keys) > 1:
            evidence.add(evidence.changed, tool)
