"""JSON values as the world handles them: paths into them, numbers, flattening, text formats.

A tool answers text. The world keeps the parsed value (an object, a list, or the text itself)
and writes it back in the format the tool was seen to use, so that an answer built from state
reads like the real one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from judge_service.traces.entities import canonical


class _Missing:
    """A path that leads nowhere (``None`` is a value)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

#: Text formats a structured answer may come in, tried in this order.
FORMATS = ("json", "json_utf8", "json_compact", "json_indent", "python")


def get_path(value: Any, path: Sequence[Any]) -> Any:
    """The value at ``path`` (keys and list indexes), or ``MISSING``."""
    for part in path:
        in_dict = isinstance(value, dict) and isinstance(part, str) and part in value
        in_list = isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)
        if not (in_dict or in_list):
            return MISSING
        value = value[part]
    return value


def set_path(value: Any, path: Sequence[Any], new: Any) -> Any:
    """``value`` with ``new`` at ``path`` (``MISSING`` deletes), copied along the path only."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        copy = list(value)
        copy[head] = set_path(value[head], rest, new)
        return copy
    copy_dict = dict(value) if isinstance(value, dict) else {}
    inner = set_path(copy_dict.get(head, MISSING), rest, new)
    if inner is MISSING:
        copy_dict.pop(head, None)
    else:
        copy_dict[head] = inner
    return copy_dict


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def decimals(value: Any) -> int:
    if isinstance(value, float):
        text = repr(value)
        return len(text.split(".", 1)[1]) if "." in text and "e" not in text else 6
    return 0


def add_numbers(a: Any, b: Any) -> Any:
    """``a + b`` rounded to the operands' precision, as a till (or a counter) would."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return round(a + b, max(decimals(a), decimals(b), 2))


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values (``1 == 1.0``; ``True`` is not ``1``)."""
    if type(a) is str and type(b) is str:  # the commonest case, first
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        return abs(a - b) < 1e-9
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """``path -> canonical leaf`` pairs; an empty container is a leaf of its own."""
    if isinstance(value, dict) and value:
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
        return out
    if is_number(value):
        return {prefix: canonical(float(value))}
    return {prefix: canonical(value)}


def field_f1(got: Any, want: Any) -> float:
    """F1 of the two values' path→value pairs (1.0 when both are empty)."""
    a, b = set(flatten(got).items()), set(flatten(want).items())
    if not a and not b:
        return 1.0
    hits = len(a & b)
    if not hits:
        return 0.0
    precision, recall = hits / len(a), hits / len(b)
    return 2 * precision * recall / (precision + recall)


def render(value: Any, fmt: str) -> str:
    """The text a tool writes for ``value`` in format ``fmt`` (text is written as is)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict | list):
        return json.dumps(value) if value is None or isinstance(value, bool) else str(value)
    if fmt == "python":
        return repr(value)
    if fmt == "json_utf8":
        return json.dumps(value, ensure_ascii=False)
    if fmt == "json_compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if fmt == "json_indent":
        return json.dumps(value, indent=2, ensure_ascii=False)
    return json.dumps(value)


def detect_format(examples: Sequence[tuple[Any, str]]) -> str:
    """The first format that writes every ``(value, text)`` example's text exactly."""
    structured = [(v, t.strip()) for v, t in examples if isinstance(v, dict | list)]
    for fmt in FORMATS:
        if all(render(v, fmt) == t for v, t in structured):
            return fmt
    return "json"


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (a Python-literal answer may hold tuples, sets, odd keys)."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


def payload_of(text: str | None, parsed: Any) -> Any:
    """What an answer is, for comparing: the parsed object or list, else the text."""
    if parsed is not None:
        return parsed
    return (text or "").strip()
