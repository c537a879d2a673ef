"""Field-level differences between entity states, as an end-state verdict lists them.

States are compared as the forge keeps them: without the fields that record *when*
(:func:`~judge_service.traces.entities.clean_state`), nor the ``clock`` fields the world's
transitions leave as they were. A difference is named by its dotted path (``items.0.price``),
at the outermost place where the two differ (a field one side lacks is one entry, however
deep its value; a longer list of objects, one per extra element). A list of scalars (ids,
tags) is one value and its order does not count: the world sets such lists from a call's
arguments in the order the agent gave them, where a backend may keep its own order, and an
end state that differs only in that order is the same end state. A reference shows an entity
through one tool's view, so a field of the final state that the reference does not show
counts only if the trajectory brought it into being (a field no view had at the start).

:func:`reference_diff` compares a final state with a whole reference in the forge's form
(:mod:`judge_service.world.verify` says how each kind of key is matched).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from judge_service.traces.calls import ToolCall
from judge_service.traces.entities import canonical, clean_state, entity_key, id_arguments
from judge_service.world.values import same

State = Mapping[str, Any]


class _Absent:
    """A field one side does not have (``None`` is a value)."""


ABSENT: Any = _Absent()


def _scalars(items: list[Any]) -> bool:
    return not any(isinstance(item, dict | list) for item in items)


def _walk(want: Any, got: Any, path: str) -> list[tuple[str, Any, Any]]:
    """``(dotted path, want, got)`` at the outermost places where two values differ: into
    objects by key, into lists of objects by index (the extra elements of a longer list each
    one); a list of scalars is compared whole, as a multiset."""
    if isinstance(want, dict) and isinstance(got, dict):
        keys = dict.fromkeys([*want, *got])
        pairs = [(str(k), want.get(k, ABSENT), got.get(k, ABSENT)) for k in keys]
    elif isinstance(want, list) and isinstance(got, list) and _scalars(want) and _scalars(got):
        same_items = sorted(map(canonical, want)) == sorted(map(canonical, got))
        return [] if same_items else [(path, want, got)]
    elif isinstance(want, list) and isinstance(got, list):
        size = max(len(want), len(got))
        pairs = [
            (str(i), want[i] if i < len(want) else ABSENT, got[i] if i < len(got) else ABSENT)
            for i in range(size)
        ]
    else:
        both = want is not ABSENT and got is not ABSENT
        return [] if both and same(want, got) else [(path, want, got)]
    out = []
    for part, a, b in pairs:
        out += _walk(a, b, f"{path}.{part}" if path else part)
    return out


def _entry(key: str, path: str, want: Any, got: Any, why: str) -> dict[str, Any]:
    want, got = (None if v is ABSENT else v for v in (want, got))
    return {"entity": key, "field": path, "want": want, "got": got, "why": why}


def comparable(value: Any, ignore: Collection[str]) -> Any:
    """``value`` without its time stamps (forge's volatile names and ``ignore``d names)."""
    value = clean_state(value)
    if not ignore:
        return value

    def strip(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: strip(v) for k, v in item.items() if k not in ignore}
        if isinstance(item, list):
            return [strip(v) for v in item]
        return item

    return strip(value)


def field_diff(
    key: str, want: Any, got: Any, before: Any, ignore: Collection[str]
) -> list[dict[str, Any]]:
    """Where ``got`` (the final state) differs from ``want`` (the reference), field by field:
    the fields the reference shows, and those the trajectory brought into being (no view had
    them before). ``why``: ``missing`` where ``got`` lacks the field, else ``differs``."""
    want, got = comparable(want, ignore), comparable(got, ignore)
    if not (isinstance(want, dict) and isinstance(got, dict)):
        return [_entry(key, p, a, b, "differs") for p, a, b in _walk(want, got, "")]
    had = comparable(before, ignore) if isinstance(before, dict) else {}
    extra = [f for f in got if f not in want and f not in had]
    out = []
    for field in [*want, *extra]:
        for path, a, b in _walk(want.get(field, ABSENT), got.get(field, ABSENT), str(field)):
            out.append(_entry(key, path, a, b, "missing" if b is ABSENT else "differs"))
    return out


def changes(key: str, before: Any, after: Any, ignore: Collection[str]) -> list[dict[str, Any]]:
    """The fields a trajectory changed in an entity no reference asked for (``want``: the
    state before, ``got``: after); an entity it created is one whole-entity entry."""
    if before is None:
        return [_entry(key, "", None, after, "unrequested")]
    pairs = _walk(comparable(before, ignore), comparable(after, ignore), "")
    return [_entry(key, p, a, b, "unrequested") for p, a, b in pairs]


def without_value(state: Any, value: str) -> Any:
    """``state`` without the top-level fields holding ``value`` (a created entity's fresh id),
    as the forge keeps a ``new:`` entity."""
    if not isinstance(state, dict):
        return state
    return {k: v for k, v in state.items() if str(v) != value}


def closest(
    key: str, want: Any, candidates: Sequence[tuple[str, Any, Any]], ignore: Collection[str]
) -> tuple[str | None, list[dict[str, Any]]]:
    """The candidate ``(world key, final state, state before)`` whose state differs least
    from the reference's (the first on a tie), and its diff; none: the entity is missing."""
    best: tuple[str | None, list[dict[str, Any]]] = (
        None,
        [{"entity": key, "field": "", "want": want, "got": None, "why": "missing"}],
    )
    for number, (found, got, before) in enumerate(candidates):
        diff = field_diff(key, want, got, before, ignore)
        if number == 0 or len(diff) < len(best[1]):
            best = (found, diff)
        if not diff:
            break
    return best


def clock_fields(world: Any) -> set[str]:
    """Names of the fields the world's transitions mark as time stamps no rule explains."""
    names: set[str] = set()
    for tool in world.tools.values():
        for effect in tool.transition.effects if tool.transition else []:
            names.update(path.rsplit(".", 1)[-1] for path in effect.clock)
    return names


def _named(arguments: Mapping[str, Any]) -> list[str]:
    call = ToolCall(0, 0, "", dict(arguments), None, None, None, False)
    return [entity_key(n, v) for n, v in id_arguments(call)]


def _blind(key: str, want: Any, calls: Sequence[Mapping[str, Any]], reference: Mapping) -> list:
    """A ``write:<tool>`` key: the sorted canonical arguments of the successful calls of the
    tool whose id arguments name no reference entity, as the forge keeps blind writes."""
    tool = key.split(":", 1)[1]
    got = sorted(
        canonical(c.get("arguments") or {})
        for c in calls
        if c.get("tool") == tool and c["write"] and not c.get("error")
        if not any(k in reference for k in _named(c.get("arguments") or {}))
    )
    if got == list(want or []):
        return []
    why = "missing" if not got else "differs"
    return [{"entity": key, "field": "", "want": want, "got": got, "why": why}]


def reference_diff(
    reference: Mapping[str, Any],
    start: State,
    final: State,
    calls: Sequence[Mapping[str, Any]],
    ignore: Collection[str],
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Diffs of every reference key, and the world key each was matched with."""
    aliases: dict[str, list[str]] = {}
    for call in calls:
        for forge_key, world_key in call.get("aliases") or []:
            aliases.setdefault(forge_key, []).insert(0, world_key)  # the latest first
    created = [k for k in final if k not in start]
    diff: list[dict[str, Any]] = []
    matched: dict[str, str] = {}
    for key, want in reference.items():
        if key.startswith("write:"):
            diff += _blind(key, want, calls, reference)
            continue
        if key.startswith("new:"):
            options = [(k, without_value(final[k], k.split("=", 1)[1]), None) for k in created]
            options = [o for o in options if o[0] not in matched.values()]
        else:
            keys = dict.fromkeys([*aliases.get(key, []), key])
            options = [(k, final[k], start.get(k)) for k in keys if k in final]
        found, entries = closest(key, want, options, ignore)
        diff += entries
        if found is not None:
            matched[key] = found
    return diff, matched
