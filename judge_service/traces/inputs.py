"""Reading uploads line by line: JSONL records, with errors that name the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from judge_service.core import json_depth


class ForgeInputError(ValueError):
    """An upload the forge cannot use. ``line`` is 1-based; ``field`` is a dotted path."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{where}{message}")
        self.line = line
        self.field = field

    def detail(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field}


def jsonl_records(data: bytes | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; a line that is not a JSON object
    raises :class:`ForgeInputError` naming it."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ForgeInputError("is not valid UTF-8", line=line) from exc
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json_depth.loads(raw)
        except json.JSONDecodeError as exc:
            raise ForgeInputError(f"is not JSON ({exc.msg})", line=number) from exc
        except json_depth.TooDeep as exc:
            raise ForgeInputError(f"is {exc}", line=number) from exc
        if not isinstance(record, dict):
            raise ForgeInputError("is not a JSON object", line=number)
        yield number, record


def text_field(record: dict[str, Any], name: str, line: int, *, required: bool = True) -> str:
    value = record.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise ForgeInputError(f"`{name}` must be a non-empty string", line=line, field=name)
    return str(value)
