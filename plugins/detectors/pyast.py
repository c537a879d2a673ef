"""Python AST helpers for the code detectors: cached parsing, dotted names, enclosing context."""

from __future__ import annotations

import ast
import builtins
import itertools
import textwrap
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

_CACHE: OrderedDict[str, ast.Module | None] = OrderedDict()
_CACHE_MAX = 256


#: Fence languages read as Python (None: an unlabelled block, which may well be Python).
PYTHON_LANGS = (None, "python", "py", "python3")


def python_tree(text: str, lang: str | None) -> ast.Module | None:
    """The module of a code segment labelled as Python (or unlabelled), else None."""
    return parse(text) if lang in PYTHON_LANGS else None


def parse(text: str) -> ast.Module | None:
    """The module of ``text`` (dedented if need be), or None when it is not Python."""
    if not text.strip():
        return None
    if text in _CACHE:
        return _CACHE[text]
    tree = _try(text)
    if tree is None and text.lstrip("\n")[:1].isspace():
        tree = _nested(text, 0)
    if tree is None and "\n" in text:
        tree = _fragments(text)
    _CACHE[text] = tree
    if len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return tree


def _try(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _nested(text: str, start: int) -> ast.Module | None:
    """Indented code (a function body cut out of its file) inside a stand-in function whose
    parameters are the body's free names: what it reads and never sets are its inputs, so
    ``if a == 3 and b == 4: return 12`` still compares inputs with literals."""
    body = textwrap.indent(textwrap.dedent(text), "    ")
    tree = _try("def __fragment__():\n" + body)
    if tree is None:
        return None
    free = _free_names(tree)
    if free:
        tree = _try(f"def __fragment__({', '.join(free)}):\n" + body) or tree
    ast.increment_lineno(tree, start - 1)
    return tree


_BUILTINS = frozenset(dir(builtins))


def _free_names(tree: ast.Module) -> list[str]:
    """Names a body loads but never binds (nor imports), builtins aside, in first-use order."""
    bound: set[str] = set()
    loaded: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.setdefault(node.id, None)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
    return [n for n in loaded if n not in bound and n not in _BUILTINS and n.isidentifier()]


def _fragments(text: str) -> ast.Module | None:
    """An edit fragment (the tail of a function, then new top-level code), chunk by chunk.

    Every chunk must parse, or the text is not taken for Python.

    Indented chunks are parsed inside a stand-in function, so that what was nested
    is not mistaken for module-level code; line numbers stay those of ``text``.
    """
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() and not line[0].isspace()]
    bounds = sorted({0, *starts, len(lines)})
    body: list[ast.stmt] = []
    for start, end in itertools.pairwise(bounds):
        chunk = "\n".join(lines[start:end])
        if not chunk.strip():
            continue
        tree = _nested(chunk, start) if chunk[:1].isspace() else _try(chunk)
        if tree is None:
            return None  # not Python after all (Ruby, C++, prose): leave it to the patterns
        if not chunk[:1].isspace():
            ast.increment_lineno(tree, start)
        body.extend(tree.body)
    return ast.Module(body=body, type_ignores=[]) if body else None


def nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, kept on the node itself.

    Parsed trees are cached and a dozen detectors walk the same ones, often more than once;
    ``ast.walk`` rebuilds its list of children at every node each time. Trees are never
    changed after parsing, so one walk serves them all.
    """
    walked = node.__dict__.get("_walked")
    if walked is None:
        walked = list(ast.walk(node))
        node._walked = walked  # type: ignore[attr-defined]
    return walked


def dotted(node: ast.AST | None) -> str:
    """``a.b.c`` for a Name/Attribute chain (calls and subscripts kept as ``()``/``[]``)."""
    parts: list[str] = []
    while node is not None:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            break
        elif isinstance(node, ast.Call):
            parts.append("()")
            node = node.func
        elif isinstance(node, ast.Subscript):
            parts.append("[]")
            node = node.value
        else:
            break
    return ".".join(reversed(parts)).replace(".()", "()").replace(".[]", "[]")


def is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def literal(node: ast.AST | None) -> object:
    """The Python value of a literal node, or a sentinel ``...`` when it is not a literal."""
    if node is None:
        return ...
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ...


def is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names and consts)


def body_without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return body[1:] if isinstance(first.value.value, str) else body
    return body


@dataclass(frozen=True)
class Context:
    """Where a node sits: enclosing functions and classes, under a main guard or not."""

    functions: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    main_guard: bool = False

    @property
    def top_level(self) -> bool:
        return not self.functions and not self.main_guard

    @property
    def in_test(self) -> bool:
        return any(f.startswith("test") for f in self.functions) or any(
            c.startswith("Test") for c in self.classes
        )


def walk(tree: ast.AST) -> Iterator[tuple[ast.AST, Context]]:
    """Every node with its context, depth first."""
    stack: list[tuple[ast.AST, Context]] = [(tree, Context())]
    while stack:
        node, context = stack.pop()
        yield node, context
        inner = context
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = Context((*context.functions, node.name), context.classes, context.main_guard)
        elif isinstance(node, ast.ClassDef):
            inner = Context(context.functions, (*context.classes, node.name), context.main_guard)
        elif is_main_guard(node):
            inner = Context(context.functions, context.classes, True)
        children = list(ast.iter_child_nodes(node))
        stack.extend((child, inner) for child in reversed(children))


def source_line(text: str, node: ast.AST) -> tuple[int, str]:
    """(0-based line index, the line's text) of a node inside ``text``."""
    index = max(0, getattr(node, "lineno", 1) - 1)
    lines = text.splitlines() or [""]
    if index >= len(lines):
        return len(lines) - 1, lines[-1]
    return index, lines[index]
