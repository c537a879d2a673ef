"""What every code-fact reader shares: one parsed file, its module-level names and tables,
the task's test literals (gathered lazily), and the list the facts go into."""

from __future__ import annotations

import ast
from collections.abc import Callable

from judge_service_plugins.detectors.facts.final_code import CodeFile
from judge_service_plugins.detectors.facts.model import Fact
from judge_service_plugins.detectors.pyast import dotted, nodes


def params_of(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = func.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in every if a.arg not in ("self", "cls")}


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in nodes(node) if isinstance(n, ast.Name)}


def reads(node: ast.AST, name: str) -> bool:
    """Whether ``node`` reads ``name`` (a plain name, or a dotted one such as ``f.calls``)."""
    return any(
        isinstance(n, ast.Name | ast.Attribute | ast.Subscript)
        and (dotted(n) == name or dotted(n).split("[")[0] == name)
        for n in nodes(node)
    )


class CodeReader:
    """One file's facts, with what the readers of each kind of fact need."""

    def __init__(self, file: CodeFile, tree: ast.Module, known: Callable[[], set[str]]) -> None:
        self.file, self.tree, self._known = file, tree, known
        self.facts: list[Fact] = []
        self.lines = file.text.splitlines() or [""]
        self.tables = self._tables()
        self.module_names = {
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        }

    def add(self, kind: str, node: ast.AST, detail: str, strength: float = 1.0) -> None:
        index = min(max(0, getattr(node, "lineno", 1) - 1), len(self.lines) - 1)
        where = f"{self.file.path or self.file.where}:{index + 1}"
        line = " ".join(self.lines[index].split())[:120]
        self.facts.append(Fact(kind, "code", where, f"{detail}: `{line}`", strength))

    @property
    def known(self) -> set[str]:
        """The task's test literals, gathered only when a branch or a table needs them."""
        return self._known()

    def _tables(self) -> dict[str, ast.AST]:
        found: dict[str, ast.AST] = {}
        for node in nodes(self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict | ast.Set):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value
        return found

    def table(self, func: ast.AST, table: object) -> ast.AST | None:
        if isinstance(table, ast.Dict | ast.Set):
            return table
        if isinstance(table, str):
            return self.tables.get(table)
        return None
