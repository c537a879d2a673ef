"""A located piece of a completion, and unified diffs split into added and removed lines.

Every finding quotes a span and says where it is; a ``Segment`` knows its place
("message 4 tool call 1 `bash` line 3", "completion diff of tests/test_x.py line 12").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CODE_LINE = re.compile(
    r"^\s*(?:(?:def|class|import|from|return|if|elif|elsif|else|for|while|end|function|const|let|var"
    r"|public|private|protected|static|int|bool|void|char|double|float|auto|fn|func|package|try|except"
    r"|catch|raise|throw|assert|switch|case|when|module|struct|impl|using|namespace|template)\b"
    r"|#include|@\w+|[\w.\[\]]+\s*[+\-*/]?=[^=]|[})\]];?\s*$|std::|print\()"
    r"|[;{]\s*$"
)

DIFF_START = re.compile(
    r"^(?:diff --git |--- (?:a/|/dev/null)|\+\+\+ (?:b/|/dev/null)|@@ -\d"
    r"|\*\*\* (?:Update|Add|Delete) File: )",
    re.M,
)
_PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$")


@dataclass(frozen=True)
class Segment:
    """A located piece of a completion. ``kind``: text, code, command, output, user, read."""

    where: str
    text: str
    kind: str
    order: int = 0
    path: str | None = None
    op: str | None = None  # write, edit, delete, diff_add, diff_del
    lang: str | None = None
    first_line: int = 1
    line_numbers: tuple[int, ...] | None = None

    def line_label(self, index: int) -> str:
        numbers = self.line_numbers
        line = numbers[index] if numbers and 0 <= index < len(numbers) else self.first_line + index
        return f"{self.where} line {line}"


def looks_like_code(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    hits = sum(1 for line in lines if _CODE_LINE.match(line))
    return hits / len(lines) >= 0.5


def diff_segments(text: str, where: str, order: int, base: int) -> list[Segment]:
    out: list[Segment] = []
    path: str | None = None
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []

    def flush() -> None:
        for op, rows in (("diff_add", added), ("diff_del", removed)):
            if rows:
                body = "\n".join(r[1] for r in rows)
                numbers = tuple(r[0] for r in rows)
                out.append(
                    Segment(
                        f"{where} diff of {path or '?'}",
                        body,
                        "code",
                        order,
                        path,
                        op,
                        None,
                        numbers[0],
                        numbers,
                    )
                )
        added.clear()
        removed.clear()

    deleted = False
    for number, line in enumerate(text.splitlines(), start=base):
        header = _PATCH_FILE.match(line) if line.startswith("*** ") else None
        if header:  # the "*** Begin Patch" format of agent apply_patch tools
            flush()
            path = header.group(2)
            if header.group(1) == "Delete":
                out.append(
                    Segment(f"{where} patch", "", "code", order, path, "delete", None, number)
                )
        elif line.startswith("*** "):
            continue
        elif line.startswith("diff --git "):
            flush()
            deleted = False
            path = line.split(" b/")[-1].strip() if " b/" in line else path
        elif line.startswith("deleted file mode"):
            deleted = True
        elif line.startswith("--- "):
            name = line[4:].strip().split("\t")[0]
            if name != "/dev/null":
                flush()
                path = name[2:] if name.startswith("a/") else name
        elif line.startswith("+++ "):
            name = line[4:].strip().split("\t")[0]
            if name == "/dev/null" or deleted:
                out.append(
                    Segment(f"{where} diff", "", "code", order, path, "delete", None, number)
                )
            else:
                path = name[2:] if name.startswith("b/") else name
        elif line.startswith("+"):
            added.append((number, line[1:]))
        elif line.startswith("-"):
            removed.append((number, line[1:]))
    flush()
    return out
