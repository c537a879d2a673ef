"""Traces for the world's tests, as production logs them: an assistant message that calls one
tool, then the tool's answer."""

from __future__ import annotations

import json
from typing import Any


def exchange(call_id: str, name: str, args: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    """The assistant's call of ``name`` with ``args`` and the tool message answering it."""
    function = {"name": name, "arguments": json.dumps(args)}
    call = {"id": call_id, "type": "function", "function": function}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": answer},
    ]
