"""Value expressions: where a value a write leaves comes from, and finding one for a value.

An expression is a tagged JSON object, so it stores with the world:

- ``{"const": v}``;
- ``{"arg": name}`` (``"at": "j"``: element j of a list argument, in an element-wise
  change; ``"sorted": true``: the list sorted);
- ``{"elem": [path]}``: a field of the element being mapped or updated;
- ``{"own": [path]}``: a field of the entity before the change (an order's first payment,
  which a change of payment method refunds), found only for the elements a write appends;
- ``{"ref": <expr of an id>, "entity": T, "field": f, "path": [...]}``: a field of the
  object, inside an entity of type ``T``, whose id field ``f`` holds that id (a price from
  a catalogue entry the call names);
- ``{"obj": {key: expr}}`` and ``{"list": [expr]}``.

:func:`abstract` explains a value seen after a write by the call's arguments, the element,
or the world's objects, preferring a source named like the field; whatever it cannot explain
stays a constant. Learning keeps only the expressions that fit every example.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from judge_service.forge.entities import canonical
from judge_service.world.formulas import NUMERIC, numeric_value
from judge_service.world.lookup import Ctx, find_object, locate
from judge_service.world.model import Expr
from judge_service.world.values import MISSING, get_path, is_number, same

#: How deep, and how many list elements each, an ``own`` source is looked for.
OWN_DEPTH = 3
OWN_ITEMS = 4


def _arg(expr: Expr, ctx: Ctx) -> Any:
    value = ctx.args.get(expr["arg"], MISSING)
    if expr.get("at") == "j":
        if not isinstance(value, list) or ctx.j is None or ctx.j >= len(value):
            return MISSING
        value = value[ctx.j]
    if expr.get("sorted"):
        if not isinstance(value, list):
            return MISSING
        try:
            value = sorted(value)
        except TypeError:
            return MISSING
    return value


def evaluate(expr: Expr, ctx: Ctx) -> Any:
    """The expression's value (``MISSING`` where a source is absent)."""
    if "const" in expr:
        return expr["const"]
    if any(kind in expr for kind in NUMERIC):
        return numeric_value(expr, ctx)
    if "arg" in expr:
        return _arg(expr, ctx)
    if "elem" in expr:
        return get_path(ctx.elem, expr["elem"])
    if "own" in expr:
        return get_path(ctx.pre, expr["own"])
    if "ref" in expr:
        key = evaluate(expr["ref"], ctx)
        if key is MISSING:
            return MISSING
        found = find_object(ctx.state, expr["entity"], expr["field"], key, ctx.index)
        return get_path(found, expr["path"])
    if "obj" in expr:
        out = {}
        for name, item in expr["obj"].items():
            out[name] = evaluate(item, ctx)
            if out[name] is MISSING:
                return MISSING
        return out
    if "list" in expr:
        items = [evaluate(item, ctx) for item in expr["list"]]
        return MISSING if any(i is MISSING for i in items) else items
    return MISSING


def trivial(value: Any) -> bool:
    """Values too common to credit to a source by chance."""
    if value is None or isinstance(value, bool) or value in ("", [], {}):
        return True
    return is_number(value) and value in (0, 1)


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


def _reference(value: Any, ctx: Ctx, key: str | None) -> Expr | None:
    """``value`` as a field of an object that an argument (or its element j) names. The
    id must name one object of its type: a payment method id held by many payments names
    none of them."""
    if ctx.index is None:
        return None
    for source in ({"arg": n} for n in ctx.args):
        ids = [source] if not isinstance(ctx.args[source["arg"]], list) else []
        if ctx.j is not None and isinstance(ctx.args[source["arg"]], list):
            ids = [{**source, "at": "j"}]
        for id_expr in ids:
            found = locate(ctx.state, evaluate(id_expr, ctx), ctx.index)
            named = Counter((entity, id_field) for entity, id_field, _ in found)
            for entity, id_field, obj in found:
                if named[entity, id_field] > 1:
                    continue
                paths = [[key]] if key in obj else []
                paths += [[name] for name in obj if name != key]
                for path in paths:
                    if same(get_path(obj, path), value):
                        return {"ref": id_expr, "entity": entity, "field": id_field, "path": path}
    return None


def _own(value: Any, within: Any, path: list[Any], key: str | None) -> list[Any] | None:
    """The path of ``value`` in the entity (depth first, first list elements first)."""
    if len(path) > OWN_DEPTH:
        return None
    pairs: list[tuple[Any, Any]] = []
    if isinstance(within, dict):
        pairs = sorted(within.items(), key=lambda kv: kv[0] != key)
    elif isinstance(within, list):
        pairs = list(enumerate(within[:OWN_ITEMS]))
    for part, item in pairs:
        if same(item, value):
            return [*path, part]
        found = _own(value, item, [*path, part], key)
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


def constants(expr: Expr | None) -> list[Any]:
    """The fixed values inside an expression."""
    if not expr:
        return []
    if "const" in expr:
        return [expr["const"]]
    if "obj" in expr:
        return [c for e in expr["obj"].values() for c in constants(e)]
    if "list" in expr:
        return [c for e in expr["list"] for c in constants(e)]
    return []


def abstract(value: Any, ctx: Ctx, key: str | None = None, own: bool = False) -> Expr:
    """One expression that gives ``value`` in ``ctx``, preferring sources named ``key``
    (``own``: the entity's own fields are a last source)."""
    found = _whole(value, ctx, key, own)
    if found is not None:
        return found
    if isinstance(value, dict) and value:
        return {"obj": {k: abstract(v, ctx, k, own) for k, v in value.items()}}
    if isinstance(value, list) and 0 < len(value) <= 8:
        return {"list": [abstract(v, ctx, key, own) for v in value]}
    return {"const": value}


def constant(expr: Expr) -> bool:
    """Whether the expression reads nothing (its value is fixed)."""
    if "const" in expr:
        return True
    if "obj" in expr:
        return all(constant(e) for e in expr["obj"].values())
    if "list" in expr:
        return all(constant(e) for e in expr["list"])
    return False
