"""Read or write: the forge's classes, with the world's own entities as evidence.

:func:`judge_service.traces.effects.classify_tools` decides by schema, then by the entities
the forge names, then by the tool's name. The world names more entities (an object keyed by
a field that holds the same-named argument, ``get_book(isbn)`` -> ``isbn=...``), so where
the forge found no evidence, the same rule runs over the world's entities: a call that names
an entity (an argument holds its id) before it is next seen changed is credited with the
change, else the call that showed it changed, unless other calls came in between (one of
them may have changed it unnamed: a payment from a card of the customer's wallet); a tool
with at least as many changes as unchanged views is a write. A view that only
adds fields, or writes a value as text, shows more of the entity: no change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.effects import Effect, ToolEffect, classify_tools
from judge_service.world.lookup import argument_values, merge
from judge_service.world.text import as_text
from judge_service.world.values import same

View = list[tuple[str, Any]]


def _scalar_text(value: Any) -> str | None:
    return None if isinstance(value, dict | list) else as_text(value)


def _changes(seen: Any, view: Any) -> bool:
    """Whether ``view`` shows ``seen`` changed. Fields it adds, or values it writes as text
    (``"3.2"`` for ``3.2``), are a read showing more of the entity, not a change."""
    if not (isinstance(seen, dict) and isinstance(view, dict)):
        return not same(merge(seen, view), seen)
    for name in seen.keys() & view.keys():
        old, new = seen[name], view[name]
        if same(old, new):
            continue
        text = _scalar_text(old)
        if text is None or text != _scalar_text(new):
            return True
    return False


def _evidence(
    calls: Sequence[ToolCall], views: Sequence[View], changed: Counter[str], unchanged: Counter[str]
) -> None:
    seen: dict[str, Any] = {}
    since: dict[str, list[str]] = {}  # key -> tools that named it since it was last seen
    unnamed: dict[str, int] = {}  # key -> calls since it was last seen that did not name it
    for call, found in zip(calls, views, strict=True):
        if call.error:
            continue
        for key, state in found:
            between = since.get(key, [])
            if key in seen and _changes(seen[key], state):
                if between:
                    changed[between[-1]] += 1
                elif not unnamed.get(key):  # else another call may have changed it unnamed
                    changed[call.name] += 1
            elif key in seen:
                unchanged.update({*between, call.name})
            seen[key] = merge(seen.get(key), state)
            since[key], unnamed[key] = [], 0
        shown_keys = {k for k, _ in found}
        values = argument_values(call.arguments)
        for key in seen:
            if key in shown_keys:
                continue
            if key.split("=", 1)[1] in values:
                since[key].append(call.name)
            else:
                unnamed[key] = unnamed.get(key, 0) + 1


def classify(
    calls: Mapping[str, Sequence[ToolCall]],
    views: Mapping[str, Sequence[View]],
    schemas: Iterable[Any],
) -> dict[str, ToolEffect]:
    """Every tool's class (see the module docstring)."""
    effects = classify_tools(calls.values(), schemas)
    changed: Counter[str] = Counter()
    unchanged: Counter[str] = Counter()
    for trace_id, trace_calls in calls.items():
        _evidence(trace_calls, views[trace_id], changed, unchanged)
    for name, effect in effects.items():
        if effect.source not in ("default", "name"):
            continue
        kind: Effect
        if changed[name] and changed[name] >= unchanged[name]:
            kind = "write"
        elif unchanged[name]:
            kind = "read"
        else:
            continue
        effects[name] = ToolEffect(
            name, kind, "evidence", effect.calls, changed[name], unchanged[name]
        )
    return effects
