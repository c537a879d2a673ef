"""(e): a model answers a tool call that nothing learned answers, told what the world knows.

The model is given the tool's schema, the current state of the entities the call names (their
ids among its arguments), and the traced calls of the tool whose arguments are most like this
one's, with their answers; it answers ``{"answer": <the tool's output text>}``. Its answer
changes no state: the world has not learned what the call would do, so a write answered this
way still leaves the episode's verdict undetermined.

The call is the episodes' (``episodes/client_tools.py``) and is made before a step's
transaction: a dry run of the action with a :class:`Recorder` finds the calls (and the state
each meets), and the step is then played with their answers (:class:`GivenAnswers`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

from judge_service.traces.entities import canonical
from judge_service.world.model import Call
from judge_service.world.replay import footprint
from judge_service.world.world import World

#: What the model answers.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "the tool's output, verbatim"}},
    "required": ["answer"],
    "additionalProperties": False,
}
#: Traced calls shown, entities shown, and the most characters of each.
SIMILAR_CALLS = 3
MAX_ENTITIES = 4
MAX_CHARS = 3000
WORD = re.compile(r"[\w#@.-]+")


class ToolSimulator(Protocol):
    """The answer text of a call no path (a)-(d) answers, or ``None``: none."""

    def answer(self, call: Call, state: Mapping[str, Any]) -> str | None: ...


def call_key(call: Call) -> str:
    return canonical([call.name, call.arguments])


class Recorder:
    """A dry run's simulator: answers nothing, keeps each call asked and the state it met."""

    def __init__(self) -> None:
        self.asked: list[tuple[Call, Mapping[str, Any]]] = []

    def answer(self, call: Call, state: Mapping[str, Any]) -> str | None:
        self.asked.append((call, state))
        return None


class GivenAnswers:
    """The answers a model gave before the step, by call (name and arguments)."""

    def __init__(self, answers: Mapping[str, str]) -> None:
        self.answers = dict(answers)

    def answer(self, call: Call, state: Mapping[str, Any]) -> str | None:
        return self.answers.get(call_key(call))


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "\u2026"


def similar_examples(examples: list[dict[str, Any]], call: Call) -> list[dict[str, Any]]:
    """The traced examples whose arguments share the most words with the call's."""
    wanted = set(WORD.findall(canonical(call.arguments)))

    def overlap(example: dict[str, Any]) -> int:
        return len(wanted & set(WORD.findall(canonical(example.get("arguments")))))

    return sorted(examples, key=overlap, reverse=True)[:SIMILAR_CALLS]


def tool_messages(
    world: World, schema: Mapping[str, Any], state: Mapping[str, Any], call: Call
) -> list[dict[str, str]]:
    """The chat that asks a model for the call's answer (module docstring)."""
    tool = world.tools.get(call.name)
    named = footprint(state, call.arguments)[:MAX_ENTITIES]
    lines = [
        f"You simulate the backend tool `{call.name}` of a service. Answer with exactly what "
        "the tool would output for the call, in the same format as its earlier answers "
        "(JSON when they are JSON, its error wording for an error), and nothing else.",
        f"The tool's parameters (JSON schema): {_clip(dict(schema))}",
    ]
    if named:
        lines.append("The current state of the entities the call names:")
        lines += [f"- {key}: {_clip(state[key])}" for key in named]
    for example in similar_examples(tool.examples if tool else [], call):
        lines.append(
            f"Earlier call: {call.name}({_clip(example.get('arguments'))}) -> "
            f"{_clip(example.get('answer'))}"
        )
    ask = f"The call: {call.name}({_clip(call.arguments)})"
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": ask}]


def answer_of(payload: Any) -> str | None:
    """The answer text from the model's JSON, or ``None`` when it gave none."""
    if isinstance(payload, Mapping) and isinstance(payload.get("answer"), str):
        text = payload["answer"].strip()
        return text[: MAX_CHARS * 4] if text else None
    return None
