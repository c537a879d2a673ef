"""Production traces as the forge reads them, and a failure sign's shape.

A trace is an OpenAI-style conversation: ``{"id", "messages", "tools"?, "metadata"?}``.
:mod:`judge_service.forge.goals` splits it into user goals, :mod:`judge_service.forge.signs`
finds the signs that it went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge_service.forge.inputs import ForgeInputError, jsonl_records, text_field

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


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


def content_text(content: Any) -> str:
    """A message's text: the string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content
        ).strip()
    return ""


def parse_traces(data: bytes | str) -> list[Trace]:
    """Every trace of a JSONL upload; the first bad line raises :class:`ForgeInputError`."""
    traces: list[Trace] = []
    seen: dict[str, int] = {}
    for line, record in jsonl_records(data):
        trace_id = text_field(record, "id", line)
        if trace_id in seen:
            raise ForgeInputError(
                f"trace id {trace_id!r} repeats line {seen[trace_id]}", line=line, field="id"
            )
        seen[trace_id] = line
        messages = record.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ForgeInputError(
                "`messages` must be a non-empty list", line=line, field="messages"
            )
        for index, message in enumerate(messages):
            where = f"messages.{index}"
            if not isinstance(message, dict):
                raise ForgeInputError("a message must be an object", line=line, field=where)
            if message.get("role") not in ROLES:
                raise ForgeInputError(
                    f"`role` must be one of {', '.join(ROLES)}", line=line, field=f"{where}.role"
                )
        if not any(
            m["role"] == "user" and content_text(m.get("content")).strip() for m in messages
        ):
            raise ForgeInputError(
                "the trace has no user turn with text", line=line, field="messages"
            )
        tools = record.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise ForgeInputError("`tools` must be a list", line=line, field="tools")
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ForgeInputError("`metadata` must be an object", line=line, field="metadata")
        traces.append(Trace(trace_id, line, messages, tools, metadata))
    if not traces:
        raise ForgeInputError("the upload has no traces", field="body")
    return traces


def excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
