"""Production traces to candidate tasks, and the signs that a trace went wrong.

A trace is an OpenAI-style conversation: ``{"id", "messages", "tools"?, "metadata"?}``. Each
user turn that starts new work is a candidate task whose prompt is the conversation up to that
turn (system prompt included), with the trace's tools. A user turn does *not* start new work
when it is an acknowledgement ("thanks", "ok"), a complaint or correction about the previous
answer, or a short reply to a question the assistant just asked.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from judge_service.forge.inputs import ForgeInputError, jsonl_records, text_field

ROLES = ("system", "developer", "user", "assistant", "tool", "function")

COMPLAINT = re.compile(
    r"\b(that'?s (wrong|not right|incorrect)|(is|was|it'?s) (wrong|incorrect)|not what i "
    r"(asked|wanted|meant)|you (didn'?t|did not|forgot|ignored|missed)|(doesn'?t|does not|"
    r"didn'?t|did not) work|still (broken|wrong|not working|failing)|i (said|told you)|"
    r"no,? i meant|try again|useless|that'?s not it)\b",
    re.IGNORECASE,
)
ACKNOWLEDGEMENT = re.compile(
    r"^\W*(yes|yeah|yep|no|nope|ok(ay)?|sure|thanks?( you)?|thx|great|perfect|cool|go ahead|"
    r"please do|do it|sounds good|got it|that works|confirmed?)\b[\w\s!.,]{0,20}$",
    re.IGNORECASE,
)
TOOL_ERROR = re.compile(
    r"\b(error|exception|traceback|failed|failure|not found|timed? ?out|denied|forbidden|"
    r"invalid|unavailable|status[\" :=]+[45]\d\d)\b",
    re.IGNORECASE,
)
#: An identical tool call (name and arguments) this many times in one trace is a retry loop.
RETRY_LOOP_CALLS = 3
#: A user reply to an assistant's question up to this many words continues the work.
SHORT_REPLY_WORDS = 8


@dataclass(frozen=True)
class Trace:
    id: str
    line: int
    messages: list[dict[str, Any]]
    tools: list[Any] | None
    metadata: dict[str, Any]


@dataclass(frozen=True)
class FailureSign:
    """Why a trace looks failed: ``user_complaint``, ``tool_error``, ``retry_loop`` or
    ``abandoned``, at message ``turn``, with a short excerpt."""

    kind: str
    turn: int
    evidence: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "turn": self.turn, "evidence": self.evidence}


@dataclass
class Candidate:
    """A user turn that starts new work, with the conversation up to it."""

    trace_id: str
    turn: int
    request: str
    prompt: list[dict[str, Any]]
    tools: list[Any] | None
    rest: list[dict[str, Any]]
    failures: list[FailureSign] = field(default_factory=list)


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


def _excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _call_key(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    return json.dumps([function.get("name"), function.get("arguments")], sort_keys=True)


def failure_signs(trace: Trace) -> list[FailureSign]:
    """Every sign that the trace went wrong, in message order."""
    signs: list[FailureSign] = []
    calls: Counter[str] = Counter()
    seen_assistant = False
    for turn, message in enumerate(trace.messages):
        role, text = message["role"], content_text(message.get("content"))
        if role == "user" and seen_assistant and COMPLAINT.search(text):
            signs.append(FailureSign("user_complaint", turn, _excerpt(text)))
        if role in ("tool", "function") and (message.get("is_error") or TOOL_ERROR.search(text)):
            signs.append(FailureSign("tool_error", turn, _excerpt(text)))
        if role == "assistant":
            seen_assistant = True
            for call in message.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                key = _call_key(call)
                calls[key] += 1
                if calls[key] == RETRY_LOOP_CALLS:
                    name = (call.get("function") or {}).get("name")
                    signs.append(FailureSign("retry_loop", turn, f"{name} called 3 times alike"))
    last = trace.messages[-1]
    answered = last["role"] == "assistant" and content_text(last.get("content")).strip()
    if not answered or trace.metadata.get("abandoned") is True:
        signs.append(FailureSign("abandoned", len(trace.messages) - 1, "no final answer"))
    return signs


def starts_new_work(messages: list[dict[str, Any]], turn: int) -> bool:
    """Whether the user turn at ``turn`` asks for something new (see the module docstring)."""
    text = content_text(messages[turn].get("content")).strip()
    if not text:
        return False
    previous = [m for m in messages[:turn] if m["role"] == "assistant"]
    if not previous:
        return True
    if ACKNOWLEDGEMENT.match(text) or COMPLAINT.search(text):
        return False
    asked = content_text(previous[-1].get("content")).rstrip().endswith("?")
    return not (asked and len(text.split()) <= SHORT_REPLY_WORDS)


def candidates(trace: Trace) -> list[Candidate]:
    """The trace's candidate tasks, each with the failure signs inside its span."""
    turns = [
        i
        for i, m in enumerate(trace.messages)
        if m["role"] == "user" and starts_new_work(trace.messages, i)
    ]
    signs = failure_signs(trace)
    found = []
    for index, turn in enumerate(turns):
        end = turns[index + 1] if index + 1 < len(turns) else len(trace.messages)
        found.append(
            Candidate(
                trace_id=trace.id,
                turn=turn,
                request=content_text(trace.messages[turn].get("content")).strip(),
                prompt=trace.messages[: turn + 1],
                tools=trace.tools,
                rest=trace.messages[turn + 1 : end],
                failures=[s for s in signs if turn <= s.turn < end],
            )
        )
    return found
