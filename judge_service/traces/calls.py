"""A trace's tool calls in order, each joined with the answer the tool gave.

Calls come from OpenAI ``tool_calls`` (answered by the ``tool`` message with the same
``tool_call_id``, else the next unanswered one that names no call id) and from the older
``function_call`` form (answered by the next ``function`` message). A broken pair is dropped,
not guessed at (:func:`broken_pairs` lists them): a call that no answer carries the id of has
no answer, and an answer whose ``tool_call_id`` names no call answers nothing.

Arguments and answers are parsed as JSON where they are JSON (an answer also as a Python
literal, ``{'id': 1}``); an answer is an error when the tool said so (``is_error``, an
``error`` key) or its text reads like one and is not a JSON object.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from judge_service.traces.conversation import Trace, content_text

ERROR_TEXT = re.compile(
    r"^\W*(error|exception|traceback|failed|failure|not found|invalid|denied|forbidden|"
    r"unavailable|timed? ?out)\b|\b(error|exception|not found|does not exist|"
    r"cannot|can't|unable to|invalid|denied|forbidden|timed? ?out|status[\" :=]+[45]\d\d)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ToolCall:
    """One call: ``turn`` is the assistant message's index, ``answer_turn`` the tool
    message's (``None`` when the trace holds no answer)."""

    index: int
    turn: int
    name: str
    arguments: dict[str, Any]
    answer: str | None
    payload: Any
    answer_turn: int | None
    error: bool
    #: Who made it: the agent (``assistant``), or a user with tools of their own (``user``).
    caller: str = "assistant"


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def parse_payload(text: str | None) -> Any:
    """A tool's answer as data where it is an object or a list: JSON, or a Python literal as
    agents that log ``str(dict)`` write it; else ``None``."""
    stripped = (text or "").strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(stripped)  # literals only: no code runs
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def is_error_answer(message: dict[str, Any] | None, text: str | None, payload: Any) -> bool:
    """Whether a tool answer reports a failure (see the module docstring)."""
    if message is not None and message.get("is_error"):
        return True
    if isinstance(payload, dict):
        return "error" in payload and len(payload) <= 3
    if isinstance(payload, list):
        return False
    return bool(text) and bool(ERROR_TEXT.search(text[:300]))


Request = tuple[int, Any, str, dict[str, Any]]
Answer = tuple[int, dict[str, Any]]


def _requests(trace: Trace, roles: tuple[str, ...] = ("assistant",)) -> list[Request]:
    """``(turn, call id, name, raw arguments)`` of every call that a message of ``roles``
    makes, in order."""
    found: list[Request] = []
    for turn, message in enumerate(trace.messages):
        if not isinstance(message, dict) or message.get("role") not in roles:
            continue
        listed = message.get("tool_calls")
        for call in listed if isinstance(listed, list) else []:
            if isinstance(call, dict):
                function = call.get("function")
                function = function if isinstance(function, dict) else {}
                found.append(
                    (turn, call.get("id") or None, str(function.get("name") or ""), function)
                )
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            found.append((turn, None, str(legacy.get("name") or ""), legacy))
    return found


def _answers(trace: Trace) -> list[Answer]:
    return [
        (turn, m)
        for turn, m in enumerate(trace.messages)
        if isinstance(m, dict) and m.get("role") in ("tool", "function")
    ]


def _pair(requests: list[Request], answers: list[Answer]) -> list[Answer | None]:
    """Each request's answer: the unused one with its call id, else (a call without an id,
    or an answer without one) the next unused answer after it; ``None`` when there is none."""
    used: set[int] = set()
    matched: list[Answer | None] = []
    for turn, call_id, _, _ in requests:
        match = None
        if call_id is not None:
            match = next(
                (a for a in answers if a[1].get("tool_call_id") == call_id and a[0] not in used),
                None,
            )
        if match is None:
            match = next(
                (
                    a
                    for a in answers
                    if a[0] > turn
                    and a[0] not in used
                    and (call_id is None or a[1].get("tool_call_id") is None)
                ),
                None,
            )
        if match is not None:
            used.add(match[0])
        matched.append(match)
    return matched


def broken_pairs(trace: Trace) -> list[str]:
    """One line for each call (the agent's or the user's) that no answer answers, and for
    each answer that answers no call; empty when every call and answer pair up."""
    requests = _requests(trace, ("assistant", "user"))
    answers = _answers(trace)
    matched = _pair(requests, answers)
    found = [
        (turn, f"call {name or '?'} (message {turn}) has no answer")
        for (turn, _, name, _), match in zip(requests, matched, strict=True)
        if match is None
    ]
    paired = {m[0] for m in matched if m is not None}
    found += [
        (turn, f"tool message {turn} answers no call") for turn, _ in answers if turn not in paired
    ]
    return [text for _, text in sorted(found)]


def tool_calls(trace: Trace, roles: tuple[str, ...] = ("assistant",)) -> list[ToolCall]:
    """Every tool call that a message of ``roles`` made, with its answer, in order. The forge
    reads the user's calls too (a user who toggles a setting on their own device changes the
    state the goal is about); the world answers the agent's."""
    requests = _requests(trace, roles)
    calls = []
    for index, ((turn, _, name, function), match) in enumerate(
        zip(requests, _pair(requests, _answers(trace)), strict=True)
    ):
        message = match[1] if match else None
        text = content_text(message.get("content")) if message else None
        payload = parse_payload(text)
        calls.append(
            ToolCall(
                index=index,
                turn=turn,
                name=name,
                arguments=_arguments(function.get("arguments")),
                answer=text,
                payload=payload,
                answer_turn=match[0] if match else None,
                error=message is not None and is_error_answer(message, text, payload),
                caller=str(trace.messages[turn].get("role")),
            )
        )
    return calls
