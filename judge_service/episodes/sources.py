"""Whose words each message of an episode is: the agent's, the world's, the user's, the task's.

Why: a trainer that also learns to predict its environment (ECHO, :mod:`trainer_bridge.echo`)
must know which tokens the environment produced, and which of those it may take as facts. A
tool answer is the world's, with the path that answered it (a)-(e); an answer a model made up
(path e, ``simulated``) is marked, so training can leave a simulator's guesses out. A user turn
is the traced user's (``replay``) or a model's.

The sources sit beside the messages (a list of the same length), not inside them: the
messages stay OpenAI chat messages that any client (verifiers, TRL) takes as they are. They
are derived from what the episode already stores (each tool answer's record, the script's
user model), so episodes stored before this module read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The path of a tool call that nothing learned from the traces answers: path (e).
MODEL_NEEDED = "model_needed"


def sources_of(
    messages: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]],
    *,
    model_user: bool = False,
) -> list[dict[str, Any]]:
    """One source per message, in order (shape: ``episodes.wire.MessageSource``).
    ``answers`` are the episode's call records (each names its tool message by index);
    ``model_user``: a model played the user after the opening turn, always the traced one."""
    records = {a.get("message"): a for a in answers if isinstance(a.get("message"), int)}
    found: list[dict[str, Any]] = []
    users = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        entry: dict[str, Any] = {"source": "agent", "path": None, "simulated": None, "by": None}
        if role == "tool":
            record = records.get(index, {})
            path = record.get("path") if isinstance(record.get("path"), str) else None
            simulated = bool(record.get("simulated")) and path == MODEL_NEEDED
            entry.update(source="world", path=path, simulated=simulated)
        elif role == "user":
            entry.update(source="user", by="model" if model_user and users else "replay")
            users += 1
        elif role == "system":
            entry["source"] = "system"
        found.append(entry)
    return found
