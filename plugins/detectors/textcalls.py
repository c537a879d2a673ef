"""Tool calls written as text, as coding CLIs and ReAct-style agents log them.

Many real transcripts carry no ``tool_calls`` field: the assistant writes the call into its
message and the harness answers in the next user message. Three shapes are read:

- ``TOOL CALL: Bash {"command": "pytest -q"}`` (arguments as JSON, or the rest of the line,
  or ``Bash(pytest -q)``), answered by ``TOOL RESULT: ...``;
- ``<tool_call>{"name": "bash", "arguments": {...}}</tool_call>``, answered by
  ``<tool_response>...</tool_response>``;
- ``Action: bash`` then ``Action Input: {...}``, answered by ``Observation: ...``.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

# Each shape holds one of these as written (a "Tool call:" line too, case aside).
_HINTS = ("TOOL", "Tool", "tool_call", "Action")
_TOOL_CALL = re.compile(r"^[ \t]*TOOL[ _]CALL\s*:?\s*([\w.:-]+)[ \t]*", re.M | re.I)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_REACT = re.compile(r"^[ \t]*Action\s*:\s*([\w.:-]+)[ \t]*\n[ \t]*Action\s+Input\s*:\s*", re.M)
_RESULT = re.compile(
    r"^\s*(?:TOOL[ _]RESULT\b[^:\n]*:|TOOL[ _]OUTPUT\b[^:\n]*:|Observation\s*:|<tool_response>)",
    re.I,
)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: dict[str, Any] | str
    start: int
    end: int


def _value(text: str, start: int) -> tuple[dict[str, Any] | str, int]:
    """The arguments at ``start``: a JSON object, ``(free text)``, or the rest of the line."""
    rest = text[start:]
    if rest.startswith("{"):
        try:
            value, used = _DECODER.raw_decode(rest)
            return (value if isinstance(value, dict) else str(value)), start + used
        except ValueError:
            pass
    if rest.startswith("("):
        depth = 0
        for index, char in enumerate(rest):
            depth += char == "("
            depth -= char == ")"
            if depth == 0:
                return rest[1:index], start + index + 1
    end = text.find("\n\n", start)
    end = len(text) if end < 0 else end
    return text[start:end].strip(), end


def text_calls(text: str) -> list[TextCall]:
    """The tool calls written in an assistant message, in order."""
    if not any(map(text.__contains__, _HINTS)):
        return []
    calls: list[TextCall] = []
    for match in _TOOL_CALL.finditer(text):
        args, end = _value(text, match.end())
        calls.append(TextCall(match.group(1), args, match.start(), end))
    for match in _TAGGED.finditer(text):
        try:
            body = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(body, dict) and body.get("name"):
            args = body.get("arguments", body.get("parameters", {}))
            if isinstance(args, str):
                with contextlib.suppress(ValueError):
                    args = json.loads(args)
            calls.append(TextCall(str(body["name"]), args, match.start(), match.end()))
    for match in _REACT.finditer(text):
        args, end = _value(text, match.end())
        calls.append(TextCall(match.group(1), args, match.start(), end))
    return sorted(calls, key=lambda c: c.start)


def without_calls(text: str, calls: list[TextCall]) -> str:
    """``text`` with the calls cut out: what the agent said around them."""
    kept, last = [], 0
    for call in calls:
        kept.append(text[last : call.start])
        last = max(last, call.end)
    kept.append(text[last:])
    return "".join(kept)


def tool_result(text: str) -> str | None:
    """The output of a harness message that answers a text tool call, else None."""
    match = _RESULT.match(text)
    if match is None:
        return None
    body = text[match.end() :]
    return body.split("</tool_response>", 1)[0].strip("\n")
