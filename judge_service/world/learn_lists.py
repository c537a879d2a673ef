"""Proposals for how a write changed a list: it appended (an argument's items, built
elements, or one element per existing element), removed what an argument names, or updated
the elements an argument names.

These are proposals from one example each; :mod:`judge_service.world.learn_ops` keeps a
proposal only if it gives every example's list.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.explain import abstract
from judge_service.world.expr import trivial
from judge_service.world.formulas import formulas
from judge_service.world.lookup import Ctx
from judge_service.world.model import Expr, Op
from judge_service.world.values import is_number, same

#: Distinct values of a field tried as a filter for element-wise appends.
MAX_FILTER_VALUES = 6
#: Formulas tried for a number in an appended element.
MAX_FORMULAS = 4


def _scalar_fields(items: list[Any]) -> list[str]:
    names: dict[str, None] = {}
    for item in items:
        if isinstance(item, dict):
            for name, value in item.items():
                if isinstance(value, str | int | bool) or value is None:
                    names[name] = None
    return list(names)


def _map_appends(before: list[Any], added: list[Any], ctx: Ctx, path: list[Any]) -> Iterator[Op]:
    filters: list[dict[str, Any] | None] = [None]
    for name in _scalar_fields(before):
        seen: dict[str, Any] = {}
        for e in before:
            if isinstance(e, dict) and name in e:
                seen.setdefault(canonical(e[name]), e[name])
        filters += [{name: v} for v in list(seen.values())[:MAX_FILTER_VALUES]]
    for where in filters:
        chosen = [
            e
            for e in before
            if where is None
            or (isinstance(e, dict) and all(same(e.get(f), v) for f, v in where.items()))
        ]
        if len(chosen) != len(added):
            continue
        exprs = [abstract(new, ctx.at(old, None)) for old, new in zip(chosen, added, strict=True)]
        if len({canonical(e) for e in exprs}) == 1 and "elem" in canonical(exprs[0]):
            yield Op(kind="map_append", path=path, expr=exprs[0], where=where)


def _computed(built: Expr, added: Any, ctx: Ctx) -> Iterator[Expr]:
    """``built`` (an element) with one number it holds as a constant computed instead: a
    payment's amount is the price difference of the items a call exchanges."""
    fields = built.get("obj", {})
    for name, part in fields.items():
        value = added.get(name) if isinstance(added, dict) else None
        if "const" not in part or not is_number(value) or trivial(value):
            continue
        for formula in formulas(value, ctx)[:MAX_FORMULAS]:
            yield {"obj": {**fields, name: formula}}


def _removed(before: list[Any], after: list[Any]) -> list[Any] | None:
    """The elements ``after`` lacks, if it is ``before`` with some taken out in order."""
    removed, index = [], 0
    for item in before:
        if index < len(after) and same(item, after[index]):
            index += 1
        else:
            removed.append(item)
    return removed if index == len(after) else None


def _removals(before: list[Any], after: list[Any], ctx: Ctx, path: list[Any]) -> Iterator[Op]:
    removed = _removed(before, after)
    if not removed:
        return
    for name, given in ctx.args.items():
        wanted = {canonical(v) for v in (given if isinstance(given, list) else [given])}
        for field in [None, *_scalar_fields(removed)]:

            def key(e: Any, field: str | None = field) -> str:
                return canonical(e if field is None else (e or {}).get(field))

            if all(key(e) in wanted for e in removed) and not any(key(e) in wanted for e in after):
                yield Op(kind="remove", path=path, where={"field": field, "arg": name})


def _updates(before: list[Any], after: list[Any], ctx: Ctx, path: list[Any]) -> Iterator[Op]:
    if not all(isinstance(e, dict) for e in [*before, *after]):
        return
    changed = [i for i in range(len(before)) if not same(before[i], after[i])]
    if not changed:
        return
    for name, given in ctx.args.items():
        wanted = {canonical(v) for v in (given if isinstance(given, list) else [given])}
        for field in _scalar_fields([before[i] for i in changed]):
            if all(canonical(before[i].get(field)) in wanted for i in changed):
                # a spec: its element ops are learned from every example at once
                yield Op(kind="update_where", path=path, where={"field": field, "arg": name})


def list_proposals(before: Any, after: list[Any], ctx: Ctx, path: list[Any]) -> Iterator[Op]:
    """Ways the list at ``path`` may have become ``after``."""
    before = before if isinstance(before, list) else []
    grown = len(after) > len(before) and all(
        same(x, y) for x, y in zip(before, after, strict=False)
    )
    if grown:
        added = after[len(before) :]
        for name, given in ctx.args.items():
            if isinstance(given, list) and same(given, added):
                yield Op(kind="extend", path=path, expr={"arg": name})
        if len(added) == 1:
            built = abstract(added[0], ctx, own=True)
            yield Op(kind="append", path=path, expr=built)
            for expr in _computed(built, added[0], ctx):
                yield Op(kind="append", path=path, expr=expr)
            yield Op(kind="append", path=path, expr={"const": added[0]})
        else:
            yield Op(kind="extend", path=path, expr=abstract(added, ctx, own=True))
        yield from _map_appends(before, added, ctx, path)
    elif len(after) < len(before):
        yield from _removals(before, after, ctx, path)
    elif before and len(after) == len(before):
        yield from _updates(before, after, ctx, path)
