"""A task as a training record: the columns ``datasets.load_dataset("json", ...)`` reads.

Every record has the same columns and types, so Arrow infers one schema: ``prompt`` is always
a list of ``{"role", "content"}`` messages with text content (tool calls are written into the
assistant's text), ``reference`` a string or null, ``tools`` a JSON string or null.
"""

from __future__ import annotations

import json
from typing import Any

from judge_service.traces.conversation import content_text


def chat(prompt: Any) -> list[dict[str, str]]:
    """The prompt as plain chat messages."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    messages = []
    for message in prompt:
        text = content_text(message.get("content"))
        for call in message.get("tool_calls") or []:
            function = (call.get("function") if isinstance(call, dict) else None) or {}
            text += f"\n[tool call] {function.get('name')}({function.get('arguments', '')})"
        messages.append({"role": str(message.get("role")), "content": text.strip()})
    return messages


def record(
    *,
    task_id: str,
    prompt: Any,
    reference: Any,
    tools: list[Any] | None,
    family: str,
    tier: str | None,
    kind: str,
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "prompt": chat(prompt),
        "reference": None if reference is None else str(reference),
        "tools": json.dumps(tools) if tools else None,
        "family": family,
        "tier": tier,
        "kind": kind,
    }
