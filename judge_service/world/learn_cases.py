"""Checking a proposed change against the examples, and changes that depend on a condition.

Some writes change an entity one of two ways by the sign of a number they compute: an
exchange of items appends a *payment* of the price difference when the new items cost more,
and a *refund* of it when they cost less. No single proposal fits every example then, but
two do, each a share of them. :func:`either` looks for two such proposals and a number read
by one of them (a formula, an argument) whose sign tells which examples each fits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.expr import evaluate
from judge_service.world.formulas import NUMERIC
from judge_service.world.lookup import Ctx
from judge_service.world.model import Expr, Op
from judge_service.world.ops import apply_op, resolve
from judge_service.world.values import MISSING, get_path, same

#: Proposals, in rank order, that are tried as one of the two branches.
MAX_BRANCHES = 40


@dataclass
class Example:
    pre: Any
    post: Any
    ctx: Ctx


def check(op: Op, ex: Example) -> bool:
    """Whether ``op`` gives this example's after-state at its path."""
    where = resolve(op.path, ex.ctx)
    if where is None:
        return True  # the example names no such key: nothing to explain here
    got = apply_op(ex.pre, op, ex.ctx)
    return got is not MISSING and same(get_path(got, where), get_path(ex.post, where))


def _settled_expr(expr: Any, examples: Sequence[Example]) -> Any:
    if not isinstance(expr, dict):
        return expr
    if "ref" in expr or "own" in expr:
        values = [evaluate(expr, ex.ctx) for ex in examples]
        if MISSING not in values and all(same(v, values[0]) for v in values):
            return {"const": values[0]}
        return expr
    if "obj" in expr:
        return {"obj": {k: _settled_expr(v, examples) for k, v in expr["obj"].items()}}
    if "list" in expr:
        return {"list": [_settled_expr(v, examples) for v in expr["list"]]}
    return expr


def settled(op: Op, examples: Sequence[Example]) -> Op:
    """``op`` with each value it looks up (in an object an argument names, in the entity)
    written as a constant where it was the same in every example the op changed: a
    transaction type of "payment" read from whichever payment came first is the constant
    "payment". Needs two situations (entity and arguments) that the op changed: one cannot
    tell a constant from a lookup."""
    changed = [ex for ex in examples if (sides := sides_of(ex, op.path)) and not same(*sides)]
    situations = {canonical([ex.pre, ex.ctx.args]) for ex in changed}
    if len(situations) < 2 or op.kind in ("either", "update_where") or not op.expr:
        return op
    return op.model_copy(update={"expr": _settled_expr(op.expr, changed)})


def sides_of(ex: Example, path: Sequence[Any]) -> tuple[Any, Any] | None:
    """The example's value at ``path`` before and after (``None``: no such key here)."""
    where = resolve(path, ex.ctx)
    if where is None:
        return None
    return get_path(ex.pre, where), get_path(ex.post, where)


def _numbers(expr: Any) -> Iterator[Expr]:
    """The numbers an expression computes or reads from an argument, outermost first."""
    if not isinstance(expr, dict):
        return
    if any(kind in expr for kind in NUMERIC) or set(expr) == {"arg"}:
        yield expr
        return
    for part in expr.get("obj", {}).values():
        yield from _numbers(part)
    for part in expr.get("list", []):
        yield from _numbers(part)


def _conditions(a: Op, b: Op) -> list[Expr]:
    found: dict[str, Expr] = {}
    for expr in [*_numbers(a.expr), *_numbers(b.expr)]:
        found.setdefault(canonical(expr), expr)
    return list(found.values())


def either(proposals: Sequence[Op], examples: Sequence[Example]) -> Op | None:
    """Two proposals and the sign that chooses between them, fitting every example; or
    ``None``. Each branch must be the only fit of at least one example."""
    everyone = frozenset(range(len(examples)))
    fits: list[tuple[Op, frozenset[int]]] = []
    for op in proposals[:MAX_BRANCHES]:
        if op.kind in ("either", "update_where"):
            continue
        fit = frozenset(i for i, ex in enumerate(examples) if check(op, ex))
        if fit and fit != everyone:
            fits.append((settled(op, [examples[i] for i in sorted(fit)]), fit))
    for (a, fit_a), (b, fit_b) in combinations(fits, 2):
        if fit_a | fit_b != everyone or fit_a <= fit_b or fit_b <= fit_a:
            continue
        for condition in _conditions(a, b):
            for strict in (False, True):
                for first, second in ((a, b), (b, a)):
                    op = Op(
                        kind="either",
                        path=a.path,
                        expr=condition,
                        where={"strict": strict},
                        ops=[first, second],
                    )
                    if all(check(op, ex) for ex in examples):
                        return op
    return None
