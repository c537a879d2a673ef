"""Learning what a write does to an entity, from its states before and after each call.

Walk the fields that differ in any example. At each, propose changes from the examples
where it differs (set to a value the arguments or the world explain, shift a number, change
a list) and keep the first that gives every example's after-state, including the examples
where the field did not change. A field no proposal explains is, if both sides are objects,
learned field by field below it; otherwise it is *unexplained*, and the transition is not
used for it. A key that is an argument's value (``payment_methods[<the method id>]``) is
learned as that argument, so the change applies to whichever key a call names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge_service.traces.entities import VOLATILE, canonical
from judge_service.world.explain import abstract, alternatives
from judge_service.world.expr import constant, constants, trivial
from judge_service.world.formulas import formulas
from judge_service.world.learn_cases import Example, check, either, settled, sides_of
from judge_service.world.learn_lists import list_proposals
from judge_service.world.lookup import Ctx, pair_up
from judge_service.world.model import Op
from judge_service.world.text import as_text
from judge_service.world.values import MISSING, add_numbers, is_number, same

#: How many differing examples propose candidates at one field at a time (:func:`_best`).
MAX_SOURCES = 8
KIND_ORDER = ("update_where", "map_append", "extend", "remove", "shift", "append", "set", "unset")


@dataclass
class Learned:
    ops: list[Op]
    unexplained: list[str]
    rejected: int = 0
    #: Fields that record when, not what (``updated_at``): left as they were when no
    #: proposal explains them, without holding the rest of the change back.
    clock: list[str] = field(default_factory=list)


def path_text(path: Sequence[Any]) -> str:
    return ".".join(f"<{p['arg']}>" if isinstance(p, dict) else str(p) for p in path) or "."


def _symbolic(key: str, ctx: Ctx) -> Any:
    for name, value in ctx.args.items():
        scalar = isinstance(value, str | int) and not isinstance(value, bool)
        if scalar and len(as_text(value)) > 2 and as_text(value) == key:
            return {"arg": name}
    return key


def _components(examples: Sequence[Example], path: list[Any]) -> list[Any]:
    found: dict[str, Any] = {}
    for ex in examples:
        sides = sides_of(ex, path)
        if sides is None:
            continue
        before, after = sides
        before = before if isinstance(before, dict) else {}
        after = after if isinstance(after, dict) else {}
        for key in dict.fromkeys([*before, *after]):
            if not same(before.get(key, MISSING), after.get(key, MISSING)):
                part = _symbolic(key, ex.ctx)
                found.setdefault(canonical(part), part)
    return list(found.values())


def _proposals(before: Any, after: Any, ctx: Ctx, path: list[Any]) -> Iterator[Op]:
    key = next((p for p in reversed(path) if isinstance(p, str)), None)
    if after is MISSING:
        yield Op(kind="unset", path=path)
        return
    for expr in alternatives(after, ctx, key):
        yield Op(kind="set", path=path, expr=expr)
    if is_number(after) and constant(abstract(after, ctx, key)):
        for expr in formulas(after, ctx):
            yield Op(kind="set", path=path, expr=expr)
    if is_number(before) and is_number(after):
        delta = add_numbers(after, -before)
        for sign in (1, -1):
            expr = abstract(sign * delta, ctx)
            if not constant(expr):
                yield Op(kind="shift", path=path, expr=expr, sign=sign)
            for expr in formulas(sign * delta, ctx):
                yield Op(kind="shift", path=path, expr=expr, sign=sign)
        yield Op(kind="shift", path=path, expr={"const": delta})
    if isinstance(after, list):
        yield from list_proposals(before, after, ctx, path)


def _rank(op: Op) -> tuple[int, int]:
    fixed = op.kind in ("set", "append", "shift") and constant(op.expr or {})
    return (1 if fixed or op.kind == "unset" else 0, KIND_ORDER.index(op.kind))


def _leaves(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {leaf for item in value.values() for leaf in _leaves(item)}
    if isinstance(value, list):
        return {leaf for item in value for leaf in _leaves(item)}
    return {canonical(value)}


def _copied(op: Op, examples: Sequence[Example]) -> bool:
    """Whether ``op`` fixes values it could have copied from the entity, with every
    example in one and the same situation: one situation cannot tell a constant from a
    copy, so such an op would only fit the state it was seen in."""
    if len({canonical([ex.pre, ex.ctx.args]) for ex in examples}) > 1:
        return False
    fixed = {
        leaf for c in _op_constants(op) for leaf in _leaves(c) if not trivial(json.loads(leaf))
    }
    return bool(fixed & _leaves(examples[0].pre)) if examples else False


def _op_constants(op: Op) -> list[Any]:
    out = constants(op.expr)
    for inner in op.ops:
        out += _op_constants(inner)
    return out


def _fill_update(op: Op, examples: Sequence[Example]) -> Op | None:
    """An ``update_where`` proposal with its element changes, learned from all examples."""
    subs = []
    for ex in examples:
        sides = sides_of(ex, op.path)
        if sides is None:
            continue
        before, after = sides
        if before is MISSING and after is MISSING:
            continue
        if not (isinstance(before, list) and isinstance(after, list)):
            return None
        if len(before) != len(after):
            return None
        where = op.where or {}
        arg = where.get("arg")
        wanted = MISSING if arg is None else ex.ctx.args.get(arg, MISSING)
        pairs = pair_up(before, where.get("field"), wanted)
        if pairs is None:
            return None
        matched = {i for i, _ in pairs}
        if any(not same(before[i], after[i]) for i in range(len(before)) if i not in matched):
            return None
        subs += [Example(before[i], after[i], ex.ctx.at(before[i], j)) for i, j in pairs]
    learned = learn_ops(subs, [])
    if learned.unexplained or not learned.ops:
        return None
    return op.model_copy(update={"ops": learned.ops})


def _fitting(proposals: Sequence[Op], examples: Sequence[Example]) -> tuple[Op | None, int]:
    """The first of ``proposals`` (in :func:`_rank` order) that gives every example's
    after-state, settled to its simplest form; and how many were rejected before it."""
    rejected = 0
    for op in sorted(proposals, key=_rank):
        if op.kind == "update_where":
            filled = _fill_update(op, examples)
            if filled is None:
                rejected += 1
                continue
            op = filled
        if all(check(op, ex) for ex in examples) and not _copied(op, examples):
            simpler = settled(op, examples)
            if simpler is not op and all(check(simpler, ex) for ex in examples):
                return simpler, rejected
            return op, rejected
        rejected += 1
    return None, rejected


def _best(examples: Sequence[Example], path: list[Any]) -> tuple[Op | None, int]:
    """The change at ``path`` that explains every example: proposed by the first
    :data:`MAX_SOURCES` examples where the field differs, then, while none fits, by the next
    as many. The order of a tool's calls in the traces is no evidence: where the first calls
    only propose rules that a later call contradicts (a new item priced from the last new
    id, which fits calls that replaced one item, not one that replaced four), a rule a later
    call proposes is still found; stopping at the first batch left the field unexplained
    whenever the traces came in such an order."""
    proposals: dict[str, Op] = {}
    batch: list[Op] = []
    sources = rejected = 0
    for ex in examples:
        sides = sides_of(ex, path)
        if sides is None or same(*sides):
            continue
        for op in _proposals(sides[0], sides[1], ex.ctx, path):
            key = canonical(op.model_dump())
            if key not in proposals:
                proposals[key] = op
                batch.append(op)
        sources += 1
        if sources % MAX_SOURCES == 0:
            found, count = _fitting(batch, examples)
            rejected += count
            if found is not None:
                return found, rejected
            if sources == MAX_SOURCES:  # two cases of the first batch, as before
                cases = either(sorted(batch, key=_rank), examples)
                if cases is not None:
                    return cases, rejected
            batch = []
    found, count = _fitting(batch, examples)
    rejected += count
    if found is not None:
        return found, rejected
    return either(sorted(proposals.values(), key=_rank), examples), rejected


def learn_ops(examples: Sequence[Example], path: list[Any] | None = None) -> Learned:
    """The changes at and below ``path`` that explain every example (see the module)."""
    path = path or []
    learned = Learned([], [])
    for part in _components(examples, path):
        sub = [*path, part]
        op, rejected = _best(examples, sub)
        learned.rejected += rejected
        if op is not None:
            learned.ops.append(op)
            continue
        nested = [
            s
            for s in (sides_of(ex, sub) for ex in examples)
            if s is not None and not (s[0] is MISSING and s[1] is MISSING)
        ]
        if nested and all(isinstance(a, dict) and isinstance(b, dict) for a, b in nested):
            below = learn_ops(examples, sub)
            learned.ops += below.ops
            learned.unexplained += below.unexplained
            learned.rejected += below.rejected
            learned.clock += below.clock
        elif isinstance(part, str) and VOLATILE.search(part):
            learned.clock.append(path_text(sub))
        else:
            learned.unexplained.append(path_text(sub))
    return learned
