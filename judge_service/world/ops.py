"""Applying learned changes (:class:`~judge_service.world.model.Op`) to an entity.

Values are never changed in place: each op returns a new entity, copied along the changed
path only. An op that cannot apply (an argument it reads is absent, a list element it must
update is not there) makes the whole change fail with ``MISSING``, and the caller answers
another way rather than invent a state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.expr import evaluate
from judge_service.world.lookup import Ctx, matches, pair_up
from judge_service.world.model import Op
from judge_service.world.text import as_text
from judge_service.world.values import MISSING, add_numbers, get_path, is_number, set_path


def resolve(path: Sequence[Any], ctx: Ctx) -> list[Any] | None:
    """The concrete path: a ``{"arg": name}`` part becomes that argument's value."""
    out: list[Any] = []
    for part in path:
        if isinstance(part, dict):
            value = ctx.args.get(part.get("arg", ""), MISSING)
            if value is MISSING or isinstance(value, dict | list):
                return None
            out.append(as_text(value))
        else:
            out.append(part)
    return out


def _update_where(items: list[Any], op: Op, ctx: Ctx) -> Any:
    where = op.where or {}
    pairs = pair_up(items, where.get("field"), ctx.args.get(where.get("arg", ""), MISSING))
    if pairs is None or ctx.args.get(where.get("arg", ""), MISSING) is MISSING:
        return MISSING
    out = list(items)
    for index, j in pairs:
        out[index] = apply_ops(items[index], op.ops, ctx.at(items[index], j))
        if out[index] is MISSING:
            return MISSING
    return out


def _list_op(current: Any, op: Op, ctx: Ctx) -> Any:
    items = [] if current is MISSING else current
    if not isinstance(items, list):
        return MISSING
    if op.kind == "append":
        value = evaluate(op.expr or {}, ctx)
        return MISSING if value is MISSING else [*items, value]
    if op.kind == "extend":
        value = evaluate(op.expr or {}, ctx)
        return [*items, *value] if isinstance(value, list) else MISSING
    if op.kind == "map_append":
        where = op.where or {}
        added = []
        for elem in items:
            if all(matches(elem, f, v) for f, v in where.items()):
                value = evaluate(op.expr or {}, ctx.at(elem, None))
                if value is MISSING:
                    return MISSING
                added.append(value)
        return [*items, *added]
    if op.kind == "remove":
        where = op.where or {}
        wanted = ctx.args.get(where.get("arg", ""), MISSING)
        if wanted is MISSING:
            return MISSING
        values = {canonical(v) for v in (wanted if isinstance(wanted, list) else [wanted])}
        field = where.get("field")
        return [e for e in items if canonical(e if field is None else e.get(field)) not in values]
    return _update_where(items, op, ctx)


def _chosen(op: Op, ctx: Ctx) -> Op | None:
    """The branch of an ``either`` op that its number's sign picks."""
    value = evaluate(op.expr or {}, ctx)
    if not is_number(value) or len(op.ops) != 2:
        return None
    above = value > 0 if (op.where or {}).get("strict") else value >= 0
    return op.ops[0] if above else op.ops[1]


def apply_op(entity: Any, op: Op, ctx: Ctx) -> Any:
    """``entity`` after ``op`` (``MISSING`` when it cannot apply)."""
    if op.kind == "either":
        chosen = _chosen(op, ctx)
        return MISSING if chosen is None else apply_op(entity, chosen, ctx)
    path = resolve(op.path, ctx)
    if path is None:
        return MISSING
    current = get_path(entity, path)
    if op.kind == "set":
        value = evaluate(op.expr or {}, ctx)
    elif op.kind == "unset":
        value = MISSING
    elif current is MISSING:
        return entity  # nothing there to change
    elif op.kind == "shift":
        delta = evaluate(op.expr or {}, ctx)
        if not (is_number(current) and is_number(delta)):
            return MISSING
        value = add_numbers(current, op.sign * delta)
    else:
        value = _list_op(current, op, ctx)
    if value is MISSING and op.kind != "unset":
        return MISSING
    return set_path(entity, path, value)


def apply_ops(entity: Any, ops: Sequence[Op], ctx: Ctx) -> Any:
    for op in ops:
        entity = apply_op(entity, op, ctx)
        if entity is MISSING:
            return MISSING
    return entity
