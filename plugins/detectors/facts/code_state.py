"""State that outlives a call and decides its answer: a call counter, a flag, a mutated
default argument, a function attribute, ``next()`` on a module-level ``cycle``. Two
contradicting asserts on the same input both pass when the first call and the second answer
differently. Memoisation keyed by the input is not this: it never changes an answer."""

from __future__ import annotations

import ast

from judge_service_plugins.detectors.facts.code_reader import CodeReader, reads
from judge_service_plugins.detectors.pyast import dotted, nodes


def state_facts(
    r: CodeReader, func: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]
) -> None:
    """A counter or flag that outlives the call and decides what the call answers."""
    declared = {
        name
        for node in nodes(func)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for name in node.names
    }
    attrs = {
        dotted(n)
        for n in nodes(func)
        if isinstance(n, ast.Attribute) and dotted(n).startswith(f"{func.name}.")
    }
    defaults = {
        a.arg
        for a, d in zip(
            func.args.args[len(func.args.args) - len(func.args.defaults) :],
            func.args.defaults,
            strict=True,
        )
        if isinstance(d, ast.List | ast.Dict | ast.Set)
    }
    kept = declared | attrs | defaults | (r.module_names - params)
    for node in nodes(func):
        name = _counted(node)
        if name is None or name not in kept:
            continue
        decided = _decides(func, name)
        if isinstance(node, ast.Call) and not _len_decides(func, name):
            continue  # a registry or a seen-set is not a counter unless its size decides
        if decided is not None:
            r.add("state_toggle", node, f"`{name}` counts calls and picks the answer")
            return
    for node in nodes(func):
        if isinstance(node, ast.Call) and dotted(node.func) == "next" and node.args:
            source = dotted(node.args[0])
            if source and source not in params and _iterator(r, source):
                r.add("state_toggle", node, f"answers in call order from `{source}`")
                return


def _iterator(r: CodeReader, name: str) -> bool:
    for node in r.tree.body:
        if isinstance(node, ast.Assign) and any(dotted(t) == name for t in node.targets):
            call = node.value
            if isinstance(call, ast.Call) and dotted(call.func).split(".")[-1] in (
                "iter", "cycle", "count", "chain"
            ):  # fmt: skip
                return True
    return False


def _decides(func: ast.AST, name: str) -> ast.AST | None:
    """A branch in ``func`` whose test reads ``name``, or an index into literals by it."""
    for node in nodes(func):
        if isinstance(node, ast.If | ast.IfExp | ast.While) and reads(node.test, name):
            return node
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.List | ast.Tuple)
            and reads(node.slice, name)
        ):
            return node
    return None


def _len_decides(func: ast.AST, name: str) -> bool:
    return any(
        isinstance(node, ast.If | ast.IfExp)
        and any(
            isinstance(n, ast.Call)
            and (
                (dotted(n.func) == "len" and n.args and reads(n.args[0], name))
                or dotted(n.func) == f"{name}.count"
            )
            for n in nodes(node.test)
        )
        for node in nodes(func)
    )


def _counted(node: ast.AST) -> str | None:
    """The state a statement counts or flips: ``x += 1``, ``x = x.get(k, 0) + 1``,
    ``f.calls = getattr(f, "calls", 0) + 1``, ``flag = not flag``, ``seen.append(...)``."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
        return dotted(node.target).split("[")[0] or None
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = dotted(node.targets[0]).split("[")[0]
        value = node.value
        if (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Add | ast.Sub)
            and any(isinstance(side, ast.Constant) for side in (value.left, value.right))
        ):
            return target or None
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
            return target or None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "add")
    ):
        return dotted(node.func.value) or None
    return None
