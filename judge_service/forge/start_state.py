"""The world a conversation started in, as its first reads showed it: part of a goal's identity.

Two conversations can open with the same words and still be two goals: the same complaint
("I can't send pictures") from a phone whose settings are wrong in another way, a request
whose answer depends on a record the user never names. What tells them apart is the world
they began in, and the agent's (or the user's) reads show it before anything is changed.

So every successful read made before the conversation's first write is a handle
``start:<tool>(<arguments>)=<answer>`` (arguments and answer as short digests of their
canonical JSON). Two goals that made the same read in an unchanged world and got different
answers began in different worlds, and never merge (:mod:`~judge_service.forge.merge`:
one kind per tool and arguments, a conflict when the answers differ). Reads made by only one
of them say nothing. Every goal of a conversation carries its conversation's start handles:
a later goal began in the same world, and its own reads may show what an earlier goal's
writes changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence

from judge_service.traces.calls import ToolCall
from judge_service.traces.entities import canonical

PREFIX = "start:"
#: Enough of a digest that two different answers never collide in one corpus.
DIGEST_CHARS = 12


def _digest(value: object) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:DIGEST_CHARS]


def start_handles(calls: Sequence[ToolCall], writes: Collection[str]) -> list[str]:
    """The handles of the reads a conversation made before its first write (module
    docstring); one per tool and arguments, the first answer kept."""
    found: dict[str, str] = {}
    for call in calls:
        if call.name in writes:
            break
        if call.error or call.answer is None:
            continue
        kind = f"{PREFIX}{call.name}({_digest(call.arguments)})"
        found.setdefault(kind, _digest(call.payload if call.payload is not None else call.answer))
    return [f"{kind}={answer}" for kind, answer in found.items()]
