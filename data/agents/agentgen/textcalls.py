"""Tool calls written as text in the assistant's message, the way many real agent transcripts
carry them (no ``tool_calls`` field), with the result coming back as a ``user`` message.

Three formats, one per trajectory (``Dialect.text_calls``):

1. ``TOOL CALL: <Name> <JSON arguments>`` on its own line; result ``TOOL RESULT: ...``
2. ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; result
   ``<tool_response>...</tool_response>``
3. ReAct: ``Action: <name>`` / ``Action Input: <JSON>``; result ``Observation: ...``
"""

from __future__ import annotations

import json
from typing import Any

FORMATS = (1, 2, 3)


def render_call(style: int, name: str, args: dict[str, Any]) -> str:
    """The text of one call in format ``style``."""
    arguments = json.dumps(args, ensure_ascii=False)
    if style == 1:
        return f"TOOL CALL: {name} {arguments}"
    if style == 2:
        payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        return f"<tool_call>{payload}</tool_call>"
    return f"Action: {name}\nAction Input: {arguments}"


def render_result(style: int, result: str) -> str:
    """The ``user`` message that carries a call's result back in format ``style``."""
    if style == 1:
        return "TOOL RESULT:" + ("\n" if "\n" in result or not result else " ") + result
    if style == 2:
        return f"<tool_response>\n{result}\n</tool_response>"
    return "Observation: " + result
