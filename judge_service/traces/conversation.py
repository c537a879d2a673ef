"""Production traces as the forge and the world read them, and a failure sign's shape.

A trace is an OpenAI-style conversation: ``{"id", "messages", "tools"?, "metadata"?}``.
:mod:`judge_service.traces.goals` splits it into user goals, :mod:`judge_service.forge.signs`
finds the signs that it went wrong.

An upload is refused (:class:`ForgeInputError`, naming the line) only for what breaks the
file itself: a line that is not a JSON object, a missing or repeated ``id``, no trace at all.
A trace the forge cannot use (:func:`unforgeable`: no user words, no assistant turn, only
tool messages, a message that is not an object, content that is not text) is set aside by
:func:`read_traces`, with its line and the reason, and the others are forged; an upload is
refused when it sets every trace aside.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from judge_service.traces.inputs import ForgeInputError, jsonl_records, text_field

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: A trace record's check: ``(field, reason)`` when it cannot be used, else ``None``.
Check = Callable[[Mapping[str, Any]], tuple[str, str] | None]
#: A user simulator's end-of-conversation token (``###STOP###``, ``###TRANSFER###``).
STOP_TOKEN = re.compile(r"#{2,}\s*[A-Z_]+\s*#{2,}")


@dataclass(frozen=True)
class Trace:
    id: str
    line: int
    messages: list[dict[str, Any]]
    tools: list[Any] | None
    metadata: dict[str, Any]


@dataclass(frozen=True)
class FailureSign:
    """Why a trace looks failed (a kind of :mod:`judge_service.forge.signs`), at message
    ``turn``, with a short excerpt."""

    kind: str
    turn: int
    evidence: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "turn": self.turn, "evidence": self.evidence}


@dataclass(frozen=True)
class SetAside:
    """A trace the forge did not use: its id, its line in the upload, and why (one line).
    ``field`` is the dotted path of what is wrong, when one thing is."""

    trace_id: str
    line: int
    reason: str
    field: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "line": self.line, "reason": self.reason}

    def error(self) -> ForgeInputError:
        return ForgeInputError(self.reason, line=self.line, field=self.field)


def content_text(content: Any) -> str:
    """A message's text: the string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content
        ).strip()
    return ""


def user_words(text: str) -> str:
    """A user turn without simulator stop tokens (``###STOP###``)."""
    return STOP_TOKEN.sub(" ", text).strip()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    names = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def _message_problem(message: dict[str, Any], index: int) -> tuple[str, str] | None:
    """A message the forge cannot read: content that is not text, a malformed tool call."""
    where = f"messages.{index}"
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return f"{where}.content", f"message {index}'s content is {_kind(content)}, not text"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.tool_calls", f"message {index}'s `tool_calls` is {_kind(calls)}"
    for number, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("function", {}), dict):
            return (
                f"{where}.tool_calls.{number}",
                f"message {index}'s tool call {number} is not an object with a `function`",
            )
    return None


def _problem(record: Mapping[str, Any], *, forge: bool) -> tuple[str, str] | None:
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages", "`messages` must be a non-empty list"
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict):
            return where, f"message {index} is {_kind(message)}, not an object"
        if message.get("role") not in ROLES:
            return f"{where}.role", f"`role` must be one of {', '.join(ROLES)}"
        if forge and (problem := _message_problem(message, index)):
            return problem
    roles = {m["role"] for m in messages}
    tools_only = roles <= {"system", "developer", "tool", "function"}
    if forge and tools_only and roles & {"tool", "function"}:
        return "messages", "the trace holds only tool messages: no user turn, no assistant turn"
    said = [content_text(m.get("content")).strip() for m in messages if m["role"] == "user"]
    if not any(said):
        return "messages", "the trace has no user turn with text"
    if forge and not any(user_words(text) for text in said):
        return "messages", "the user said nothing but simulator tokens such as ###STOP###"
    if forge and "assistant" not in roles:
        return "messages", "the trace has no assistant turn"
    if record.get("tools") is not None and not isinstance(record.get("tools"), list):
        return "tools", "`tools` must be a list"
    if not isinstance(record.get("metadata") or {}, dict):
        return "metadata", "`metadata` must be an object"
    return None


def unreadable(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, reason)`` when a trace record is no conversation at all (messages that are
    not objects with a known role, no user text, ``tools`` or ``metadata`` of the wrong
    type), else ``None``."""
    return _problem(record, forge=False)


def unforgeable(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, reason)`` when the forge cannot make tasks of a trace record, else ``None``:
    :func:`unreadable`, or content that is not text (a string or a list of parts), a tool call
    that is not an object with a ``function``, only tool messages, a user who said nothing but
    stop tokens, no assistant turn."""
    return _problem(record, forge=True)


def read_traces(
    data: bytes | str, *, check: Check = unforgeable, strict: bool = False
) -> tuple[list[Trace], list[SetAside]]:
    """The traces of a JSONL upload that pass ``check``, and those set aside.

    A line that is not a JSON object, a missing or repeated ``id`` and an upload with no
    trace raise :class:`ForgeInputError`; so does an upload whose every trace is set aside
    (with the first one's reason), and, when ``strict``, the first trace set aside."""
    traces: list[Trace] = []
    aside: list[SetAside] = []
    seen: dict[str, int] = {}
    for line, record in jsonl_records(data):
        trace_id = text_field(record, "id", line)
        if trace_id in seen:
            raise ForgeInputError(
                f"trace id {trace_id!r} repeats line {seen[trace_id]}", line=line, field="id"
            )
        seen[trace_id] = line
        problem = check(record)
        if problem is not None:
            aside.append(SetAside(trace_id, line, problem[1], problem[0]))
            if strict:
                raise aside[-1].error()
            continue
        tools, metadata = record.get("tools"), record.get("metadata") or {}
        traces.append(Trace(trace_id, line, record["messages"], tools, metadata))
    if not traces and aside:
        raise aside[0].error()
    if not traces:
        raise ForgeInputError("the upload has no traces", field="body")
    return traces, aside


def parse_traces(data: bytes | str) -> list[Trace]:
    """Every trace of a JSONL upload; the first bad line raises :class:`ForgeInputError`
    (a trace that is :func:`unreadable` too: nothing is set aside)."""
    return read_traces(data, check=unreadable, strict=True)[0]


def excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
