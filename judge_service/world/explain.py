"""Finding an expression (:mod:`judge_service.world.expr`) that explains a value a write
left: the call's arguments, the element, the world's objects, the entity's own fields.

:func:`abstract` explains a value, preferring a source named like the field; whatever it
cannot explain stays a constant. Learning keeps only the expressions that fit every example.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.expr import constant, evaluate, trivial
from judge_service.world.lookup import Ctx, locate
from judge_service.world.model import Expr
from judge_service.world.text import as_text
from judge_service.world.values import MISSING, same

#: How deep, and how many list elements each, an ``own`` source is looked for.
OWN_DEPTH = 3
OWN_ITEMS = 4
#: How deep a referenced object is searched for a value.
REF_DEPTH = 4


def _argument(value: Any, ctx: Ctx, key: str | None) -> Expr | None:
    names = sorted(ctx.args, key=lambda n: (n != key, key is None or key not in n, n))
    for name in names:
        given = ctx.args[name]
        if same(given, value):
            return {"arg": name}
        at_j = ctx.j is not None and isinstance(given, list) and ctx.j < len(given)
        if at_j and same(given[ctx.j], value):
            return {"arg": name, "at": "j"}
        if isinstance(given, list) and isinstance(value, list):
            try:
                if same(sorted(given), value):
                    return {"arg": name, "sorted": True}
            except TypeError:
                pass
    return None


def _id_sources(ctx: Ctx) -> list[Expr]:
    """Expressions that may hold an id: each scalar argument (element j of a list one, in
    an element-wise change), then each scalar field of the element."""
    ids: list[Expr] = []
    for name, given in ctx.args.items():
        if not isinstance(given, list):
            ids.append({"arg": name})
        elif ctx.j is not None:
            # element j first; the last element too: a real backend applied the last new
            # item's price and options to every item one call changed, and a world answers
            # as the backend did
            ids += [{"arg": name, "at": "j"}, {"arg": name, "at": "last"}]
    if isinstance(ctx.elem, dict):
        ids += [{"elem": [f]} for f, v in ctx.elem.items() if not isinstance(v, dict | list)]
    return ids


def _keys(ctx: Ctx, sources: list[Expr]) -> dict[str, Expr]:
    """Scalar values the call names (as text), each with the expression that names it: a
    key of a referenced object that is one of them is that expression."""
    out: dict[str, Expr] = {}
    for source in sources:
        value = evaluate(source, ctx)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            out.setdefault(as_text(value), source)
    return out


def _inside(value: Any, obj: Any, keys: dict[str, Expr], key: str | None) -> list[Any] | None:
    """The path of ``value`` inside a referenced object: its own fields first (one named
    ``key`` first), then below; a dict key that the call names is written as that name."""
    if not isinstance(obj, dict):
        return None
    names = sorted(obj, key=lambda n: n != key)
    for name in names:
        if same(obj[name], value):
            return [name]
    queue: list[tuple[Any, list[Any]]] = [(obj[n], [n]) for n in names]
    while queue:
        item, path = queue.pop(0)
        if not isinstance(item, dict) or len(path) >= REF_DEPTH:
            continue
        for name, inner in item.items():
            here = [*path, keys.get(name, name)]
            if same(inner, value):
                return here
            queue.append((inner, here))
    return None


def _reference(value: Any, ctx: Ctx, key: str | None) -> Expr | None:
    """``value`` as a field of an object that an argument (or its element j, or a field of
    the element) names. The id must name one object of its type: a payment method id held
    by many payments names none of them."""
    if ctx.index is None:
        return None
    sources = _id_sources(ctx)
    keys = _keys(ctx, sources)
    for id_expr in sources:
        found = locate(ctx.state, evaluate(id_expr, ctx), ctx.index)
        named = Counter((entity, id_field) for entity, id_field, _ in found)
        for entity, id_field, obj in found:
            if named[entity, id_field] > 1:
                continue
            path = _inside(value, obj, keys, key)
            if path is not None:
                return {"ref": id_expr, "entity": entity, "field": id_field, "path": path}
    return None


def _own(value: Any, within: Any, path: list[Any], key: str | None) -> list[Any] | None:
    """The path of ``value`` in the entity (depth first, first list elements first), one
    that ends in a field named ``key`` first: a payment's ``amount`` copied from the first
    payment's ``amount``, not from an item's ``price`` that happens to be equal."""
    named = _own_at(value, within, path, key, named=True) if key is not None else None
    return named if named is not None else _own_at(value, within, path, key, named=False)


def _own_at(
    value: Any, within: Any, path: list[Any], key: str | None, *, named: bool
) -> list[Any] | None:
    if len(path) > OWN_DEPTH:
        return None
    pairs: list[tuple[Any, Any]] = []
    if isinstance(within, dict):
        pairs = sorted(within.items(), key=lambda kv: kv[0] != key)
    elif isinstance(within, list):
        pairs = list(enumerate(within[:OWN_ITEMS]))
    for part, item in pairs:
        if same(item, value) and (not named or part == key):
            return [*path, part]
        found = _own_at(value, item, [*path, part], key, named=named)
        if found is not None:
            return found
    return None


def _whole(value: Any, ctx: Ctx, key: str | None, own: bool = False) -> Expr | None:
    if isinstance(ctx.elem, dict) and key in ctx.elem and same(ctx.elem[key], value):
        return {"elem": [key]}
    if key is not None and key in ctx.args:
        found = _argument(value, Ctx({key: ctx.args[key]}, j=ctx.j), key)
        if found is not None:
            return found
    if trivial(value):
        return None
    found = _argument(value, ctx, key)
    if found is not None:
        return found
    if isinstance(ctx.elem, dict):
        for name, item in ctx.elem.items():
            if same(item, value):
                return {"elem": [name]}
    found = _reference(value, ctx, key)
    if found is None and own and isinstance(ctx.pre, dict | list):
        path = _own(value, ctx.pre, [], key)
        found = None if path is None else {"own": path}
    return found


def alternatives(value: Any, ctx: Ctx, key: str | None = None) -> list[Expr]:
    """Every argument that gives the whole ``value`` (as is, element j, sorted), then
    :func:`abstract`'s expression and the constant."""
    found: list[Expr] = []
    for name, given in ctx.args.items():
        variants: list[Expr] = [{"arg": name}, {"arg": name, "sorted": True}]
        if ctx.j is not None:
            variants.append({"arg": name, "at": "j"})
        found += [e for e in variants if same(evaluate(e, ctx), value) and given is not MISSING]
    found += [abstract(value, ctx, key), {"const": value}]
    unique: dict[str, Expr] = {}
    for expr in found:
        unique.setdefault(canonical(expr), expr)
    return list(unique.values())


def abstract(value: Any, ctx: Ctx, key: str | None = None, own: bool = False) -> Expr:
    """One expression that gives ``value`` in ``ctx``, preferring sources named ``key``
    (``own``: the entity's own fields are a last source)."""
    found = _whole(value, ctx, key, own)
    if found is not None:
        return found
    if isinstance(value, dict) and value:
        return {"obj": {k: abstract(v, ctx, k, own) for k, v in value.items()}}
    if isinstance(value, list) and value:
        found = _each(value, ctx, key, own)
        if found is not None:
            return found
    if isinstance(value, list) and 0 < len(value) <= 8:
        return {"list": [abstract(v, ctx, key, own) for v in value]}
    return {"const": value}


def _each(value: list[Any], ctx: Ctx, key: str | None, own: bool) -> Expr | None:
    """``value`` as one element per element of a list argument, each explained the same
    way with that element as the element."""
    for name, given in ctx.args.items():
        if not isinstance(given, list) or len(given) != len(value):
            continue
        pairs = enumerate(zip(given, value, strict=True))
        items = [abstract(v, ctx.at(g, j), key, own) for j, (g, v) in pairs]
        if len({canonical(i) for i in items}) == 1 and not constant(items[0]):
            return {"each": name, "item": items[0]}
    return None
