"""Value expressions: where a value a write leaves comes from, and their values.

An expression is a tagged JSON object, so it stores with the world:

- ``{"const": v}``;
- ``{"arg": name}`` (``"at": "j"``: element j of a list argument, in an element-wise
  change; ``"at": "last"``: its last element, which a backend may apply to every element it
  changes; ``"sorted": true``: the list sorted);
- ``{"elem": [path]}``: a field of the element being mapped or updated;
- ``{"own": [path]}``: a field of the entity before the change (an order's first payment,
  which a change of payment method refunds), found only for the elements a write appends;
- ``{"ref": <expr of an id>, "entity": T, "field": f, "path": [...]}``: a field of the
  object, inside an entity of type ``T``, whose id field ``f`` holds that id (a price from
  a catalogue entry the call names); a part of the path may be an expression (the fare of
  the date and cabin the call names: ``["dates", {"elem": ["date"]}, {"arg": "cabin"}]``);
- ``{"each": name, "item": expr}``: one value per element of the list argument ``name``,
  ``item`` evaluated with that element as the element (a booking's flights, built from the
  flights the call lists);
- ``{"obj": {key: expr}}`` and ``{"list": [expr]}``.

:mod:`judge_service.world.explain` finds an expression for a value.
"""

from __future__ import annotations

from typing import Any

from judge_service.world.formulas import NUMERIC, numeric_value
from judge_service.world.lookup import Ctx, find_object
from judge_service.world.model import Expr
from judge_service.world.text import as_text
from judge_service.world.values import MISSING, get_path, is_number


def _arg(expr: Expr, ctx: Ctx) -> Any:
    value = ctx.args.get(expr["arg"], MISSING)
    if expr.get("at") == "j":
        if not isinstance(value, list) or ctx.j is None or ctx.j >= len(value):
            return MISSING
        value = value[ctx.j]
    elif expr.get("at") == "last":
        if not isinstance(value, list) or not value:
            return MISSING
        value = value[-1]
    if expr.get("sorted"):
        if not isinstance(value, list):
            return MISSING
        try:
            value = sorted(value)
        except TypeError:
            return MISSING
    return value


def _concrete(path: list[Any], ctx: Ctx) -> list[Any] | None:
    """A reference's path with its expression parts as the keys they name (``None``: a
    part has no scalar value)."""
    out: list[Any] = []
    for part in path:
        if isinstance(part, dict):
            part = evaluate(part, ctx)
            if part is MISSING or isinstance(part, dict | list) or part is None:
                return None
            part = as_text(part)
        out.append(part)
    return out


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
        path = _concrete(expr["path"], ctx)
        return MISSING if path is None else get_path(found, path)
    if "each" in expr:
        given = ctx.args.get(expr["each"], MISSING)
        if not isinstance(given, list):
            return MISSING
        items = [evaluate(expr["item"], ctx.at(g, j)) for j, g in enumerate(given)]
        return MISSING if any(i is MISSING for i in items) else items
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


def constant(expr: Expr) -> bool:
    """Whether the expression reads nothing (its value is fixed)."""
    if "const" in expr:
        return True
    if "obj" in expr:
        return all(constant(e) for e in expr["obj"].values())
    if "list" in expr:
        return all(constant(e) for e in expr["list"])
    return False
