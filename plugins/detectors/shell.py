"""Shell commands as segments: the command itself, and the files it writes, edits or deletes.

Heredocs (``cat > f << EOF``), ``echo ... > f``, ``python -c``, ``sed -i``, ``rm``,
``git rm`` and ``mv`` become code segments with their path and operation.
"""

from __future__ import annotations

import re

from judge_service_plugins.detectors.segment import Segment

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")

_REDIRECT = re.compile(r"(?:>>?|\btee\s+(?:-a\s+)?)\s*(['\"]?)([^\s'\"<>|;&]+)\1")

_ECHO = re.compile(
    r"\b(?:echo|printf)\s+(?:-[ne]+\s+)?(['\"])(.*?)(?<!\\)\1\s*>>?\s*([^\s;&|]+)", re.S
)

_PY_C = re.compile(r"\bpython[\d.]*\s+-c\s+(['\"])(.*?)(?<!\\)\1", re.S)

_RM = re.compile(
    r"(?:^|[;&|]\s*|\s)(?:git\s+rm|rm|unlink|truncate\s+-s\s*0)\s+((?:-\S+\s+)*)([^;&|\n]+)"
)

_RESTORE = re.compile(
    r"\bgit\s+(?:checkout\s+\S+\s+--|restore\s+(?:--source[= ]\S+\s+)?(?:--\s+)?)\s*([^;&|\n]+)"
)
_MV = re.compile(r"(?:^|[;&|]\s*|\s)(?:git\s+)?mv\s+(?:-\S+\s+)*(\S+)\s+(\S+)")

_SED = re.compile(r"\bsed\s+(?:-\S*i\S*|--in-place)\s+(.*?)\s+([^\s;&|]+)\s*(?:$|[;&|])", re.M)


def command_segments(command: str, where: str, order: int, base: int = 1) -> list[Segment]:
    out = [Segment(where, command, "command", order, None, None, "bash", base)]
    lines = command.split("\n") if "<<" in command else []
    index = 0
    while index < len(lines):
        line = lines[index]
        doc = _HEREDOC.search(line)
        if doc:
            end = next(
                (j for j in range(index + 1, len(lines)) if lines[j].strip() == doc.group(2)),
                len(lines),
            )
            body = "\n".join(lines[index + 1 : end])
            target = _REDIRECT.search(line[doc.end() :]) or _REDIRECT.search(line[: doc.start()])
            path = target.group(2) if target else None
            lang = (
                "python" if re.search(r"\bpython", line) or (path or "").endswith(".py") else None
            )
            out.append(
                Segment(
                    where,
                    body,
                    "code",
                    order,
                    path,
                    "write" if path else None,
                    lang,
                    base + index + 1,
                )
            )
            index = end + 1
            continue
        index += 1
    for match in _ECHO.finditer(command) if ("echo" in command or "printf" in command) else ():
        first = base + command.count("\n", 0, match.start())
        body = match.group(2).encode().decode("unicode_escape", "ignore")
        out.append(Segment(where, body, "code", order, match.group(3), "write", None, first))
    for match in _PY_C.finditer(command) if "-c" in command else ():
        first = base + command.count("\n", 0, match.start())
        out.append(Segment(where, match.group(2), "code", order, None, None, "python", first))
    for match in (
        _RM.finditer(command)
        if ("rm" in command or "unlink" in command or "truncate" in command)
        else ()
    ):
        first = base + command.count("\n", 0, match.start())
        for path in match.group(2).split():
            if not path.startswith(("-", ">", "2>")):
                out.append(
                    Segment(
                        where, match.group(0).strip(), "code", order, path, "delete", None, first
                    )
                )
    for match in _MV.finditer(command) if "mv" in command else ():
        first = base + command.count("\n", 0, match.start())
        out.append(
            Segment(
                where, match.group(0).strip(), "code", order, match.group(1), "delete", None, first
            )
        )
    for match in _RESTORE.finditer(command) if "git" in command else ():
        first = base + command.count("\n", 0, match.start())
        for path in match.group(1).split():
            if not path.startswith("-"):
                out.append(Segment(where, match.group(0), "code", order, path, "edit", None, first))
    for match in _SED.finditer(command) if "sed" in command else ():
        first = base + command.count("\n", 0, match.start())
        out.append(
            Segment(where, match.group(1), "code", order, match.group(2), "edit", None, first)
        )
    return out
