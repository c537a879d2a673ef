"""(c) Tools whose answer does not depend on the state: constants, templates, arithmetic,
and tables of answers that the traces pin down.

- a *template*: every answer is the same text with the arguments' values in the same slots
  ("Transfer successful", "Hello {name}"); a constant is a template with no slot;
- *arithmetic*: the tool evaluates its one text argument as arithmetic (a calculator), and
  writes the number in one format that fits every example (``round:2`` ...);
- a *table*: the same arguments always got the same answer, across traces and states, and
  some arguments were seen more than once.

Each is kept only if it gives every answered call's text.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.model import FunctionRule
from judge_service.world.observe import Step
from judge_service.world.text import fill, parts_of

_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
#: Tried in this order: the first that writes every example's number is kept.
NUMBER_FORMATS = ("round:2", "round:4", "round:1", "round:0", "fixed:2", "int", "g", "str")


def arithmetic(text: str) -> float | None:
    """The value of ``text`` as arithmetic over numbers, or ``None`` (nothing else runs)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            if isinstance(node.value, bool):
                raise ValueError
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            right = value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ValueError
            return _OPS[type(node.op)](value(node.left), right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        raise ValueError

    try:
        return value(tree)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None


def write_number(number: float, fmt: str) -> str:
    kind, _, digits = fmt.partition(":")
    if kind == "round":
        rounded = round(number, int(digits))
        return str(int(rounded)) if digits == "0" else str(rounded)
    if kind == "fixed":
        return f"{number:.{int(digits)}f}"
    if kind == "int":
        return str(int(number)) if number == int(number) else str(number)
    if kind == "g":
        return f"{number:g}"
    return str(number)


def call_function(rule: FunctionRule, args: Mapping[str, Any]) -> str | None:
    """The rule's answer for these arguments (``None`` when it has none)."""
    if rule.kind == "template":
        return fill(rule.template, args)
    if rule.kind == "arithmetic":
        text = args.get(rule.arg or "")
        number = arithmetic(text) if isinstance(text, str) else None
        return None if number is None else write_number(number, rule.number_format or "str")
    return rule.table.get(canonical(args))


def _arithmetic(answered: Sequence[Step]) -> FunctionRule | None:
    first = answered[0].call.arguments
    for name, given in first.items():
        if not isinstance(given, str):
            continue
        found = [arithmetic(str(s.call.arguments.get(name, ""))) for s in answered]
        numbers = [n for n in found if n is not None]
        if len(numbers) < len(found):
            continue
        for fmt in NUMBER_FORMATS:
            if all(
                write_number(n, fmt) == (s.call.answer or "").strip()
                for n, s in zip(numbers, answered, strict=True)
            ):
                return FunctionRule(kind="arithmetic", arg=name, number_format=fmt)
    return None


def learn_function(steps: Sequence[Step]) -> FunctionRule | None:
    """The first of template, arithmetic, table that every answered call fits."""
    answered = [s for s in steps if not s.call.error and s.call.answer is not None]
    if not answered:
        return None
    texts = {canonical(parts_of(s.call.answer or "", s.call.arguments)) for s in answered}
    no_args = all(not s.call.arguments for s in answered)
    if len(texts) == 1 and (len(answered) > 1 or no_args):
        parts = parts_of(answered[0].call.answer or "", answered[0].call.arguments)
        return FunctionRule(kind="template", template=parts)
    found = _arithmetic(answered)
    if found is not None:
        return found
    table: dict[str, str] = {}
    repeated = False
    for step in answered:
        key = canonical(step.call.arguments)
        if key in table and table[key] != step.call.answer:
            return None
        repeated = repeated or key in table
        table[key] = step.call.answer or ""
    return FunctionRule(kind="table", table=table) if repeated else None
