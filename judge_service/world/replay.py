"""(d) Replay: the traced answer of the same call in the same state.

"The same state" is the state of the entities the call's arguments name (their ids among the
arguments' values), so a call replays in any episode whose named entities are as they were
when it was traced, whatever else differs. The world keeps replays only of calls that
(a)-(c) do not already answer as the trace did.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.lookup import argument_values


def footprint(state: Mapping[str, Any], args: Mapping[str, Any]) -> list[str]:
    """The keys of the entities the arguments name."""
    values = argument_values(args)
    return sorted(k for k in state if k.split("=", 1)[1] in values)


def fingerprint(name: str, args: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    named = {k: state[k] for k in footprint(state, args)}
    text = canonical([name, args, named])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
