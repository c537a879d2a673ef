"""The world a conversation started in, as its first reads showed it: part of a goal's identity.

Two conversations can open with the same words and still be two goals: the same complaint
("I can't send pictures") from a phone whose settings are wrong in another way, a request
whose answer depends on a record the user never names. What tells them apart is the world
they began in, and the agent's (or the user's) reads show it before anything is changed.

So every successful read that no earlier write of the conversation could have changed is a
handle ``start:<tool>(<arguments>)=<answer>`` (arguments and answer as short digests of their
canonical JSON). A write could have changed a read when the traces show it did (somewhere, the
same read answered otherwise after that write tool than before it: :func:`read_effects`), or
when the read shows a record the write touched (an id the write named or answered). So a read
of the phone's app permissions after the agent enabled roaming on the account still shows the
world the conversation began in, while a read of the order that a cancellation touched, or of a
status bar after a toggle known to change it, does not. Two goals that made the same read in an
unchanged world and got different answers began in different worlds, and never merge
(:mod:`~judge_service.forge.merge`: one kind per tool and arguments, a conflict when the
answers differ). Reads made by only one of them say nothing. Every goal of a conversation
carries its conversation's start handles: a later goal began in the same world, and its own
reads may show what an earlier goal's writes changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence

from judge_service.traces.calls import ToolCall
from judge_service.traces.entities import answer_entities, canonical, entity_key, id_arguments

PREFIX = "start:"
#: Enough of a digest that two different answers never collide in one corpus.
DIGEST_CHARS = 12


def _digest(value: object) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:DIGEST_CHARS]


def _read_key(call: ToolCall) -> str:
    return f"{call.name}({_digest(call.arguments)})"


def _answer(call: ToolCall) -> str:
    return _digest(call.payload if call.payload is not None else call.answer)


def _records(call: ToolCall) -> set[str]:
    """The records a call names or answers: its id arguments and its answer's entities."""
    return {entity_key(n, v) for n, v in id_arguments(call)} | {
        key for key, _ in answer_entities(call)
    }


def read_effects(
    traces: Iterable[Sequence[ToolCall]], writes: Collection[str]
) -> set[tuple[str, str]]:
    """``(write tool, read tool)`` pairs where some trace answered the same read otherwise
    after a successful call of that write tool than before it."""
    found: set[tuple[str, str]] = set()
    for calls in traces:
        last: dict[str, tuple[str, int]] = {}  # read -> (its answer, writes made before it)
        made: list[str] = []
        for call in calls:
            if call.error or call.answer is None:
                continue
            if call.name in writes:
                made.append(call.name)
                continue
            key, answer = _read_key(call), _answer(call)
            if key in last and last[key][0] != answer:
                found.update((w, call.name) for w in made[last[key][1] :])
            last[key] = (answer, len(made))
    return found


def start_handles(
    calls: Sequence[ToolCall],
    writes: Collection[str],
    effects: Collection[tuple[str, str]] = (),
) -> list[str]:
    """The handles of the reads that no earlier write of the conversation could have changed
    (module docstring; ``effects`` from :func:`read_effects`); one per tool and arguments,
    the first answer kept."""
    found: dict[str, str] = {}
    made: set[str] = set()
    touched: set[str] = set()
    for call in calls:
        if call.error or call.answer is None:
            continue
        if call.name in writes:
            made.add(call.name)
            touched |= _records(call)
            continue
        if any((w, call.name) in effects for w in made) or _records(call) & touched:
            continue
        found.setdefault(f"{PREFIX}{_read_key(call)}", _answer(call))
    return [f"{kind}={answer}" for kind, answer in found.items()]
