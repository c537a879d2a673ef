"""Text templates of a call's arguments: "Error: order #W1 not found" is
``[["text", "Error: order "], ["arg", "order_id"], ["text", " not found"]]``.

A value fills a slot only where it stands as a whole word (``"no"`` does not fill the start
of ``"not found"``), longest values first, so one template fits every call of a tool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from judge_service.world.model import Parts

#: Shorter values are too likely to appear by chance.
MIN_SLOT = 2


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value)


def _slot_pattern(text: str) -> str:
    escaped = re.escape(text)
    start = r"(?<!\w)" if text[:1].isalnum() or text[:1] == "_" else ""
    end = r"(?!\w)" if text[-1:].isalnum() or text[-1:] == "_" else ""
    return start + escaped + end


def parts_of(text: str, args: Mapping[str, Any], bad: tuple[str, Any] | None = None) -> Parts:
    """``text`` with the arguments' values (and the failing element ``bad``) as slots."""
    slots: list[tuple[str, str, str]] = []  # (value text, kind, argument)
    if bad is not None:
        slots.append((as_text(bad[1]), "bad", bad[0]))
    for name, value in args.items():
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            slots.append((as_text(value), "arg", name))
    slots = [s for s in slots if len(s[0]) >= MIN_SLOT]
    slots.sort(key=lambda s: -len(s[0]))
    parts: Parts = [["text", text]]
    for value, kind, name in slots:
        pattern = re.compile(_slot_pattern(value))
        out: Parts = []
        for part in parts:
            if part[0] != "text":
                out.append(part)
                continue
            pieces = pattern.split(part[1])
            for index, piece in enumerate(pieces):
                if index:
                    out.append([kind, name])
                if piece:
                    out.append(["text", piece])
        parts = out
    return parts


def fill(parts: Parts, args: Mapping[str, Any], bad: Any = None) -> str | None:
    """The text of ``parts`` for these arguments (``None`` when a slot has no value)."""
    out = []
    for kind, value in parts:
        if kind == "text":
            out.append(value)
        elif kind == "bad":
            if bad is None:
                return None
            out.append(as_text(bad))
        elif value in args:
            out.append(as_text(args[value]))
        else:
            return None
    return "".join(out)


def slots(parts: Parts) -> int:
    return sum(1 for kind, _ in parts if kind != "text")
