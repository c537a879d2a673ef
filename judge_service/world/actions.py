"""An agent's action, read and checked before the world answers it.

An action is an assistant message: ``{"role"?: "assistant", "content"?, "tool_calls"?}``,
tool calls in the OpenAI form (``{"id", "type": "function", "function": {"name",
"arguments": <JSON text or object>}}``; the older ``function_call`` is read as one call).
What a real backend would refuse is refused here, with the error text it would send back
(``Error: ...``), never an exception: an action that is not such a message, a call of the
wrong shape, arguments that are not a JSON object, a tool that does not exist, arguments
that fail the tool's JSON schema (checked with jsonschema-rs, compiled once per schema).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs

from judge_service.traces.conversation import content_text


@dataclass(frozen=True)
class Request:
    """One tool call: ``arguments`` to answer, or the ``error`` text that refuses it.
    ``invalid``: the error text of arguments that fail the tool's schema (the world may
    know the tool's own words for it)."""

    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    invalid: str | None = None


@dataclass(frozen=True)
class Action:
    """The assistant message to record (``None`` when the action is no message at all),
    its text, its tool calls, and the ``error`` that refuses the whole action."""

    message: dict[str, Any] | None
    text: str = ""
    requests: list[Request] = field(default_factory=list)
    error: str | None = None


def tool_schemas(tools: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> its parameters' JSON schema, from OpenAI tool specs (or bare functions)."""
    found: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        spec = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if isinstance(name, str) and name:
            parameters = spec.get("parameters")
            found[name] = dict(parameters) if isinstance(parameters, Mapping) else {}
    return found


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> jsonschema_rs.Validator | None:
    """A compiled validator per schema (``None``: the schema itself is not valid)."""
    try:
        return jsonschema_rs.validator_for(json.loads(schema_json))
    except (jsonschema_rs.ValidationError, ValueError, TypeError):
        return None


def schema_error(name: str, schema: Mapping[str, Any], arguments: dict[str, Any]) -> str | None:
    """The error text when ``arguments`` fail the tool's schema, else ``None``."""
    if not schema:
        return None
    validator = _validator(json.dumps(schema, sort_keys=True))
    if validator is None:
        return None
    try:
        validator.validate(arguments)
    except jsonschema_rs.ValidationError as exc:
        where = "/".join(str(p) for p in exc.instance_path)
        at = f" at '{where}'" if where else ""
        return f"Error: invalid arguments for {name}{at}: {exc.message}"
    return None


def _arguments(raw: Any) -> dict[str, Any] | str:
    """The call's arguments, or the error text."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            return f"Error: the arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(raw, dict):
        return "Error: the arguments must be a JSON object"
    return raw


def _request(
    call: Any,
    call_id: str,
    known: Collection[str],
    schemas: Mapping[str, dict[str, Any]],
) -> Request:
    if not isinstance(call, Mapping):
        return Request(call_id, "", error="Error: a tool call must be an object")
    function = call.get("function") if "function" in call else call
    if not isinstance(function, Mapping):
        return Request(call_id, "", error="Error: a tool call's `function` must be an object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return Request(call_id, "", error="Error: a tool call must name its function")
    if name not in known and name not in schemas:
        # the offered tools; where the task offers no schemas, those the world can answer
        offered = ", ".join(sorted(schemas) or sorted(known)) or "none"
        return Request(call_id, name, error=f"Error: unknown tool '{name}'. Tools: {offered}")
    arguments = _arguments(function.get("arguments"))
    if isinstance(arguments, str):
        return Request(call_id, name, error=arguments)
    invalid = schema_error(name, schemas.get(name) or {}, arguments)
    return Request(call_id, name, arguments=arguments, invalid=invalid)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def parse_action(
    action: Any,
    known: Collection[str],
    schemas: Mapping[str, dict[str, Any]],
    id_prefix: str = "call",
) -> Action:
    """The action read and checked (module docstring). ``known``: the tools the world can
    answer; ``schemas``: the offered tools' parameter schemas (offered tools are known too);
    a call without an id gets ``<id_prefix>_<n>``."""
    if not isinstance(action, Mapping) or not _is_json(action):
        return Action(None, error="Error: the action must be an assistant message (a JSON object)")
    if action.get("role", "assistant") != "assistant":
        return Action(None, error="Error: the action must be a message of role 'assistant'")
    content = action.get("content")
    if content is not None and not isinstance(content, str | list):
        return Action(None, error="Error: `content` must be text, a list of parts or null")
    calls: Any = action.get("tool_calls")
    legacy = action.get("function_call")
    if calls is None and legacy is not None:
        calls = [{"type": "function", "function": legacy}]
    text = content_text(content).strip()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls is None or calls == []:
        if not text:
            return Action(message, error="Error: the action has neither text nor tool calls")
        return Action(message, text=text)
    if not isinstance(calls, list):
        return Action(message, text=text, error="Error: `tool_calls` must be a list")
    stored, requests = [], []
    for number, call in enumerate(calls):
        given = call.get("id") if isinstance(call, Mapping) else None
        call_id = given if isinstance(given, str) and given else f"{id_prefix}_{number}"
        if isinstance(call, Mapping):
            call = {**call, "id": call_id}
        stored.append(call)
        requests.append(_request(call, call_id, known, schemas))
    message["tool_calls"] = stored
    return Action(message, text=text, requests=requests)
