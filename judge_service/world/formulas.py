"""Numbers a write computes: sums over what the call names, and their differences.

A number after a write that no argument or object holds may still be arithmetic over them:
an exchange's price difference is the new items' prices (catalogue objects the call names)
less the old items' prices (elements of the entity the call names). Terms are:

- ``{"arg": name}``: a numeric argument;
- ``{"sum_ref": name, "entity": T, "field": f, "path": p}``: over a list argument's ids, the
  sum of ``p`` in the object (inside an entity of type ``T``) whose id field ``f`` is each;
- ``{"sum_match": [list], "field": f, "arg": name, "path": p}``: over the elements of the
  entity's own ``list`` that the argument names (each id takes one element), the sum of ``p``.

A formula is a term or ``{"add": [term, term], "signs": [1, -1]}``; learning proposes those
that give the value seen, and keeps one only if it gives every example's.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

from judge_service.world.lookup import Ctx, find_object, locate, pair_up
from judge_service.world.model import Expr
from judge_service.world.values import MISSING, add_numbers, get_path, is_number, same

NUMERIC = ("sum_ref", "sum_match", "add")
#: At most this many terms are combined in pairs.
MAX_TERMS = 24


def _sum(values: list[Any], raw: bool = False) -> Any:
    total: Any = 0
    for value in values:
        if not is_number(value):
            return MISSING
        total = total + value if raw else add_numbers(total, value)
    return total


def _elements(expr: Expr, ctx: Ctx) -> list[Any] | None:
    """The values a sum term adds, in the order of the argument that names them (``None``:
    not a sum term, or its argument or list is absent)."""
    if "sum_ref" in expr:
        ids = ctx.args.get(expr["sum_ref"], MISSING)
        if not isinstance(ids, list):
            return None
        entity, field = expr["entity"], expr["field"]
        objects = [find_object(ctx.state, entity, field, i, ctx.index) for i in ids]
        return [get_path(o, expr["path"]) for o in objects]
    if "sum_match" in expr:
        items = get_path(ctx.pre, expr["sum_match"])
        wanted = ctx.args.get(expr["arg"], MISSING)
        if not isinstance(items, list) or wanted is MISSING:
            return None
        pairs = pair_up(items, expr["field"], wanted)
        return None if pairs is None else [get_path(items[i], expr["path"]) for i, _ in pairs]
    return None


def _pairwise(expr: Expr, ctx: Ctx) -> Any:
    """Machine arithmetic of sum terms taken pair by pair, as a backend's loop adds each
    element's difference (``total += new - old``), or ``MISSING`` where the terms are not
    sums over lists of one length. In floating point the order shows: the backend the
    traces recorded answered ``71.96000000000001``, where the difference of the two sums is
    ``71.95999999999992``."""
    found = [_elements(term, ctx) for term in expr["add"]]
    lists = [values for values in found if values is not None]
    if len(lists) != len(found) or len({len(values) for values in lists}) != 1:
        return MISSING
    total: Any = 0
    for values in zip(*lists, strict=True):
        if not all(is_number(v) for v in values):
            return MISSING
        step: Any = 0
        for sign, value in zip(expr["signs"], values, strict=True):
            step = step + sign * value
        total = total + step
    return total


def numeric_value(expr: Expr, ctx: Ctx, raw: bool = False) -> Any:
    """A term's or formula's value (``MISSING`` when a part is absent or not a number).
    ``raw`` (or the formula's own ``"raw": true``): machine arithmetic, not rounded to the
    operands' cents: the backend the traces recorded answered ``0.04999999999999716`` for
    ``53.48 - 53.43``, and a world answers as it did; over several elements, pair by pair
    (:func:`_pairwise`), where the terms allow it."""
    raw = raw or bool(expr.get("raw"))
    if "sum_ref" in expr or "sum_match" in expr:
        values = _elements(expr, ctx)
        return MISSING if values is None else _sum(values, raw)
    if "add" in expr:
        if raw and (paired := _pairwise(expr, ctx)) is not MISSING:
            return paired  # its terms' elements read once, not again as the terms' sums
        parts = [numeric_value(t, ctx, raw) for t in expr["add"]]
        if any(p is MISSING for p in parts):
            return MISSING
        return _sum([s * p for s, p in zip(expr["signs"], parts, strict=True)], raw)
    if "arg" in expr:
        value = ctx.args.get(expr["arg"], MISSING)
        return value if is_number(value) else MISSING
    return MISSING


def _numbers(obj: Any) -> list[str]:
    return [k for k, v in obj.items() if is_number(v)] if isinstance(obj, dict) else []


def _ref_terms(ctx: Ctx) -> list[Expr]:
    terms: list[Expr] = []
    for name, ids in ctx.args.items():
        if not isinstance(ids, list) or not ids or ctx.index is None:
            continue
        for entity, field, obj in locate(ctx.state, ids[0], ctx.index):
            for path in _numbers(obj):
                terms.append({"sum_ref": name, "entity": entity, "field": field, "path": [path]})
    return terms


def _match_terms(ctx: Ctx) -> list[Expr]:
    terms: list[Expr] = []
    if not isinstance(ctx.pre, dict):
        return terms
    for list_name, items in ctx.pre.items():
        if not isinstance(items, list) or not items or not isinstance(items[0], dict):
            continue
        for name, wanted in ctx.args.items():
            for field, value in items[0].items():
                if isinstance(value, dict | list) or pair_up(items, field, wanted) in (None, []):
                    continue
                for path in _numbers(items[0]):
                    terms.append(
                        {"sum_match": [list_name], "field": field, "arg": name, "path": [path]}
                    )
    return terms


def formulas(value: Any, ctx: Ctx) -> list[Expr]:
    """Terms and differences or sums of two terms that give ``value`` here."""
    if not is_number(value) or isinstance(value, bool):
        return []
    terms = [{"arg": n} for n, v in ctx.args.items() if is_number(v)]
    terms = (terms + _match_terms(ctx) + _ref_terms(ctx))[:MAX_TERMS]
    values = [(t, numeric_value(t, ctx)) for t in terms]
    values = [(t, v) for t, v in values if v is not MISSING]
    found: list[Expr] = [t for t, v in values if same(v, value)]
    for (a, x), (b, y) in permutations(values, 2):
        if same(add_numbers(x, -y), value):
            formula: Expr = {"add": [a, b], "signs": [1, -1]}
            if _unrounded(formula, value, ctx):
                formula["raw"] = True
            found.append(formula)
    return found


def _unrounded(formula: Expr, value: Any, ctx: Ctx) -> bool:
    """Whether the traced ``value`` is the formula's machine arithmetic, not its rounding."""
    exact = numeric_value(formula, ctx, raw=True)
    return exact is not MISSING and exact == value and numeric_value(formula, ctx) != value
