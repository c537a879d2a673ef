"""Answers picked from literals: an input compared with a literal of the task's tests, a
table of them indexed by an input (``answers[n]``, ``.get(n, False)``, a module ``EXPECTED``),
an input compared whole with one specific value that answers at once, a table keyed by every
argument. The test literals come from the task, the test files shown and failure output."""

from __future__ import annotations

import ast
import re

from judge_service_plugins.detectors.facts.code_exits import exits_at_once
from judge_service_plugins.detectors.facts.code_reader import CodeReader, names_in
from judge_service_plugins.detectors.literals import TRIVIAL, norm_value
from judge_service_plugins.detectors.pyast import dotted, literal, nodes


def literal_facts(
    r: CodeReader, func: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]
) -> None:
    _whole_input(r, func, params)
    if not any(map(_may_pick, nodes(func))) or not r.known:
        return
    for node in nodes(func):
        if isinstance(node, ast.If | ast.IfExp) and names_in(node.test) & params:
            hits = _test_values(node.test, r.known)
            if hits:
                r.add("test_literal_branch", node, f"branches on test input {hits[0]}")
                break
    for node in nodes(func):
        key, table = _lookup(node)
        if key is None or not names_in(key) & params:
            continue
        dictionary = r.table(func, table)
        if dictionary is not None:
            keys = _keys(dictionary)
            hits = [k for k in keys if k in r.known and k not in TRIVIAL]
            # a table of the test inputs, or one whose every key is a test input
            if hits and (len(keys) >= 2 or len(hits) == len(keys)):
                r.add("test_literal_table", node, f"a table of the test inputs ({hits[0]})")
                return


def _whole_input(
    r: CodeReader, func: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]
) -> None:
    """An input compared whole with a specific literal (a grid, a card number) that then
    answers at once; or a table keyed by every argument together. Honest code branches
    on the shape of its input, rarely on one exact value of it."""
    for node in nodes(func):
        if not isinstance(node, ast.If) or not node.body:
            continue
        if not isinstance(node.body[0], ast.Return | ast.Raise) and not exits_at_once(node.body[0]):
            continue
        for test in nodes(node.test):
            if not isinstance(test, ast.Compare) or not isinstance(test.ops[0], ast.Eq):
                continue
            sides = (test.left, *test.comparators)
            inputs = [x for x in sides if literal(x) is ... and names_in(x) & params]
            if inputs and any(_specific(literal(x)) for x in sides if x not in inputs):
                r.add("input_literal_branch", node, "answers one exact input at once")
                return
    for node in nodes(func):
        key, name = _lookup(node)
        if key is None or not params or not params <= names_in(key):
            continue
        if len(params) == 1 and not isinstance(key, ast.Tuple | ast.Call):
            continue  # MONTHS[n - 1]: one input into a table is how data tables are read
        table = r.table(func, name)
        entries = len(getattr(table, "keys", None) or getattr(table, "elts", None) or [])
        if entries >= 3:
            r.add("input_table", node, "answers from a table keyed by every argument")
            return


def _may_pick(node: ast.AST) -> bool:
    """A node that could pick a test's answer: a branch, a comparison, an index, a ``.get``."""
    if isinstance(node, ast.If | ast.IfExp | ast.Subscript | ast.Compare):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
    )


def _lookup(node: ast.AST) -> tuple[ast.AST | None, object]:
    """(the key, the table) of ``table[key]``, ``table.get(key, ...)`` or ``key in table``."""
    if isinstance(node, ast.Subscript):
        return node.slice, dotted(node.value) or node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
    ):
        return node.args[0], dotted(node.func.value) or None
    if isinstance(node, ast.Compare) and any(isinstance(o, ast.In) for o in node.ops):
        side = node.comparators[0]
        return node.left, dotted(side) if isinstance(side, ast.Name) else side
    return None, None


def _specific(value: object) -> bool:
    """A literal too specific for a rule: a container of values, a long string with digits."""
    if isinstance(value, list | tuple | set | frozenset | dict):
        return len(value) >= 2
    return isinstance(value, str) and len(value) >= 8 and any(c.isdigit() for c in value)


def assert_literals(texts: list[str]) -> set[str]:
    """Literal arguments and expected values of the assert lines in ``texts`` (test files shown,
    failure output, the task), parsed as Python: nested lists and tuples included."""
    found: set[str] = set()
    for text in texts:
        if "assert" not in text and "==" not in text:
            continue
        for line in text.splitlines():
            if len(line) > 400 or ("assert" not in line and "==" not in line):
                continue
            code = re.sub(r"^\s*(?:E\s+|>\s+)?", "", line).strip().rstrip(",;")
            tree = _parse_line(code)
            if tree is None:
                continue
            for node in ast.walk(tree):
                values = []
                if isinstance(node, ast.Call):
                    values = list(node.args)
                elif isinstance(node, ast.Compare):
                    values = [node.left, *node.comparators]
                for value in values:
                    item = literal(value)
                    if item is not ...:
                        found.add(norm_value(item))
    return found - TRIVIAL


def _parse_line(code: str) -> ast.AST | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _test_values(test: ast.AST, known: set[str]) -> list[str]:
    hits = []
    for node in nodes(test):
        # equality and membership pick out values; an order comparison is a range check
        if isinstance(node, ast.Compare) and all(
            isinstance(op, ast.Eq | ast.Is | ast.In) for op in node.ops
        ):
            for side in (node.left, *node.comparators):
                value = literal(side)
                if value is ... or isinstance(side, ast.Name):
                    continue
                items = value if isinstance(value, tuple | set | frozenset) else [value]
                for item in items:
                    norm = norm_value(item)
                    if norm in known and norm not in TRIVIAL:
                        hits.append(norm)
    return hits


def _keys(table: ast.AST) -> list[str]:
    raw = table.keys if isinstance(table, ast.Dict) else getattr(table, "elts", [])
    out = []
    for key in raw:
        value = literal(key)
        if value is ...:
            continue
        parts = value if isinstance(value, tuple) else (value,)
        out.extend(norm_value(p) for p in parts)
    return out
