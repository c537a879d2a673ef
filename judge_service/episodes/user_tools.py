"""What the simulated user does on their own side when the agent tells them to.

In some domains the user holds tools of their own (their phone: toggle a setting, restart,
check what it shows) and the agent can only ask. The world learns those tools from the
traced user's calls (:mod:`judge_service.world.user_side`); here the user uses them:

- **Only what the agent's message asks for.** A message that asks what a traced agent
  message asked (TF-IDF cosine at least :data:`SIMILAR`) gets the calls the traced user made
  then, once (less the writes already made). Else the tools it names: whose name it writes
  as it is (``toggle_airplane_mode``), or all of whose name words stand close together in
  it, in any order ("check your network status" for ``check_network_status``; a write
  already made is not made again on words alone), called in the order named. The user never
  changes their side unprompted, so a policy cannot farm a fix it never asked for.
- **With the arguments the message gives.** Among the arguments the traced calls of the tool
  used, the set with the most values that the message mentions; a tie goes to the traced
  user's own (the replayed run's), then to the first seen.
- **Then they say what they saw.** The replayed user's reply is the turn the traced user
  said after the same call with the same answer; where none did, the user reports what the
  tool showed, in its words. It ends the conversation only when that turn was the traced
  user's closing one. A user played by a model keeps the model's reply.

Each call is answered by the world and recorded among the episode's answers with ``"by":
"user"``; its effects count in the end state like the agent's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from judge_service.episodes.user_turns import similarities
from judge_service.traces.effects import tool_name
from judge_service.world.text import as_text
from judge_service.world.world import World

WORD = re.compile(r"[a-z0-9]+")
#: Extra words allowed between the words of a tool's name ("check your network status").
GAP = 2
#: How like a traced request a message must be for the user to do what they did then.
SIMILAR = 0.5
#: How much of a message's end is read for tool names (a bound on a step's work).
READ_CHARS = 4000


def _literal(name: str, low: str) -> int | None:
    """Where the message writes the tool's name as it is (``toggle_airplane_mode``)."""
    found = re.search(rf"(?<![a-z0-9_]){re.escape(name.lower())}(?![a-z0-9_])", low)
    return found.start() if found else None


def _in_words(parts: Sequence[str], words: Sequence[str]) -> int | None:
    """Where the words of the name appear close together, in any order, or ``None``. A
    window is built only where one of them starts it: a step reads every user tool's name
    against the message."""
    size = len(parts) + GAP
    wanted = set(parts)
    for start, first in enumerate(words):
        if first not in wanted and first.removesuffix("s") not in wanted:
            continue
        window = words[start : start + size]
        if wanted <= {*window, *(w.removesuffix("s") for w in window)}:
            return start
    return None


def named_tools(world: World, text: str, done: Sequence[str] = ()) -> list[str]:
    """The user tools the agent's message asks for, in the order named (module docstring).
    ``done``: the user's writes so far (tool names, repeats kept); a write already made is
    made again only when the message writes its name as it is."""
    low = text[-READ_CHARS:].lower()
    words = WORD.findall(low)
    found = []
    for name, tool in world.tools.items():
        if tool.caller != "user":
            continue
        at = _literal(name, low)
        if at is None and not (tool.effect == "write" and name in done):
            parts = WORD.findall(name.lower())
            spot = _in_words(parts, words) if len(parts) > 1 else None
            at = None if spot is None else len(" ".join(words[:spot]))
        if at is not None:
            found.append((at, name))
    return [n for _, n in sorted(found)]


def traced_act(
    acts: Sequence[Mapping[str, Any]], text: str, done: Collection[int]
) -> tuple[int, list[Mapping[str, Any]]] | None:
    """Where the message names no tool: the traced user's act (the calls one agent message
    asked for) whose asking words are most like the message, at least :data:`SIMILAR`,
    and not made yet (``done``: the acts made, by number); ``(number, its calls)``."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for act in acts:
        groups.setdefault(str(act.get("asked") or ""), []).append(act)
    asked = [a for a in groups if a]
    if not asked or not text.strip():
        return None
    scores = similarities(asked, text)
    ranked = sorted(range(len(asked)), key=lambda i: -scores[i])
    for number in ranked:
        if scores[number] < SIMILAR:
            return None
        if number not in done:
            return number, groups[asked[number]]
    return None


def _mentioned(arguments: Mapping[str, Any], text: str) -> int:
    low = text.lower()
    return sum(1 for v in arguments.values() if as_text(v).lower() in low)


def arguments_for(
    world: World, name: str, text: str, acts: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The arguments the user calls ``name`` with (module docstring)."""
    options: list[dict[str, Any]] = []
    seen: set[str] = set()
    own = [dict(a.get("arguments") or {}) for a in acts if a.get("tool") == name]
    traced = [json.loads(s.arguments) for s in world.tools[name].side]
    for arguments in [*own, *traced]:
        key = json.dumps(arguments, sort_keys=True)
        if key not in seen:
            seen.add(key)
            options.append(arguments)
    if not options:
        return {}
    return max(enumerate(options), key=lambda o: (_mentioned(o[1], text), -o[0]))[1]


def reply_after(acts: Sequence[Mapping[str, Any]], done: Sequence[tuple[str, str]]) -> str:
    """What the replayed user says after calling ``done`` (``(tool, answer)`` pairs): the
    traced turn after the last of them with the same answer, else the answers themselves
    (a turn said after another answer would report what the tool did not show)."""
    for tool, answer in reversed(done):
        for act in acts:
            if act.get("tool") == tool and act.get("said") and act.get("answer") == answer:
                return str(act["said"])
    return " ".join(answer.strip() for _, answer in done if answer.strip())


def offered(world: World, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The traced tool schemas less the user's own tools: an agent is never offered one."""
    users = {n for n, t in world.tools.items() if t.caller == "user"}
    return [t for t in tools if tool_name(t) not in users] if users else tools
