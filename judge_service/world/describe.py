"""Human readings of learned expressions and changes, for ``GET /v1/worlds/{id}`` and
``judge-service world show``: ``args.reason``, ``'cancelled'``, ``elem.amount``,
``status := "cancelled"``.
"""

from __future__ import annotations

from judge_service.traces.entities import canonical
from judge_service.world.model import Expr, Op
from judge_service.world.values import is_number


def describe(expr: Expr | None) -> str:
    """A short human reading: ``args.reason``, ``'cancelled'``, ``elem.amount``."""
    if expr is None:
        return "?"
    if "const" in expr:
        return canonical(expr["const"])[:40]
    if "add" in expr:
        signs = ["+" if s > 0 else "-" for s in expr["signs"]]
        text = " ".join(f"{s} {describe(t)}" for s, t in zip(signs, expr["add"], strict=True))
        return text.removeprefix("+ ")
    if "sum_ref" in expr:
        where = f"{expr['entity']}[{expr['field']}=each args.{expr['sum_ref']}]"
        return f"sum({where}.{'.'.join(map(str, expr['path']))})"
    if "sum_match" in expr:
        where = ".".join(map(str, expr["sum_match"]))
        field, path = expr["field"], ".".join(map(str, expr["path"]))
        return f"sum({where}[{field} in args.{expr['arg']}].{path})"
    if "arg" in expr:
        text = f"args.{expr['arg']}" + ("[j]" if expr.get("at") else "")
        return f"sorted({text})" if expr.get("sorted") else text
    if "elem" in expr:
        return "elem." + ".".join(map(str, expr["elem"]))
    if "own" in expr:
        return "self." + ".".join(map(str, expr["own"]))
    if "ref" in expr:
        inner = describe(expr["ref"])
        path = ".".join(f"<{describe(p)}>" if isinstance(p, dict) else str(p) for p in expr["path"])
        return f"{expr['entity']}[{expr['field']}={inner}].{path}"
    if "each" in expr:
        return f"for each elem of args.{expr['each']}: {describe(expr['item'])}"
    if "obj" in expr:
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in expr["obj"].items()) + "}"
    if "list" in expr:
        return "[" + ", ".join(describe(v) for v in expr["list"]) + "]"
    return "?"


def describe_op(op: Op) -> str:
    where = ".".join(f"<{p['arg']}>" if isinstance(p, dict) else str(p) for p in op.path)
    if op.kind == "set":
        return f"{where} := {describe(op.expr)}"
    if op.kind == "unset":
        return f"{where} removed"
    if op.kind == "shift":
        sign, expr = op.sign, op.expr or {}
        if is_number(expr.get("const")) and expr["const"] < 0:
            sign, expr = -sign, {"const": -expr["const"]}
        return f"{where} {'+' if sign > 0 else '-'}= {describe(expr)}"
    if op.kind in ("append", "extend"):
        return f"{where} {op.kind} {describe(op.expr)}"
    if op.kind == "map_append":
        return f"{where} append for each {op.where or 'element'}: {describe(op.expr)}"
    if op.kind == "either" and len(op.ops) == 2:
        test = ">" if (op.where or {}).get("strict") else ">="
        first, second = (describe_op(o) for o in op.ops)
        return f"if {describe(op.expr)} {test} 0: {first}; else: {second}"
    where_arg = (op.where or {}).get("arg")
    field = (op.where or {}).get("field")
    if op.kind == "remove":
        return f"{where} remove where {field or 'element'} in args.{where_arg}"
    inner = "; ".join(describe_op(o) for o in op.ops)
    return f"{where} where {field} in args.{where_arg}: {inner}"
