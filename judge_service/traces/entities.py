"""Entities and their states, as the tools' answers show them.

An entity is an object a tool returned, keyed ``"<id field>=<value>"``: the answer's id field
whose value the call passed as an argument (``get_order(order_id="A1")`` returning
``{"order_id": "A1", "user_id": "u7", ...}`` is ``order_id=A1``) unless an id field named like
what the tool is about holds another value (``open_ticket(customer_id="C4")`` returning
``{"ticket_id": "T9", "customer_id": "C4"}`` is ``ticket_id=T9``: the object's own id), else
its ``id`` field, else
the call's single id argument (an answer without its own id), else its first id field. An id
field or argument is one named like an identifier, in snake or camel case (``id``, ``*_id``,
``*Id``, ``*_ref``, ``*_number``, ``*_no``, ``*_code``, ``*_key``, ``*Key``; not a zip,
country or phone code) with a scalar value.
Nothing here knows a domain: the keys are whatever the tools call their ids.

Fields that record *when* rather than *what* (``created_at``, ``updated_at``, ``timestamp``)
are dropped from states, so that two runs reaching the same state at other times agree.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection
from typing import Any

from judge_service.traces.calls import ToolCall

#: The words that end an id's name, in snake case (``order_id``) or camel case (``orderId``):
#: one list for both patterns below, so that a word added to one is in the other.
_ID_WORDS = ("id", "ref", "number", "no", "code", "key")
_SNAKE = "_(?:" + "|".join(_ID_WORDS) + ")"
_CAMEL = "(?:" + "|".join(w.capitalize() for w in _ID_WORDS) + ")"
ID_NAME = re.compile(rf"(^id$|^ref$|reference$|{_SNAKE}$|[a-z0-9]{_CAMEL}$)")
ID_SUFFIX = re.compile(rf"({_SNAKE}|{_CAMEL})$")
NOT_ID = re.compile(
    r"(zip|postal|post|country|currency|language|lang|status|area|phone)_?code$|phone"
)
VOLATILE = re.compile(
    r"^(created|updated|modified|last_modified|last_updated)(_at|_on)?$|timestamp"
)

State = dict[str, Any]


@functools.lru_cache(maxsize=4096)
def is_id_name(name: str) -> bool:
    """Whether a field named ``name`` holds ids. Cached: an episode step asks it of every
    field of the objects it looks ids up in, and a domain has a few dozen field names."""
    return bool(ID_NAME.search(name)) and not NOT_ID.search(name.lower())


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool) and str(value) != ""


def entity_key(field: str, value: Any) -> str:
    return f"{field}={value}"


def id_arguments(call: ToolCall) -> list[tuple[str, str]]:
    """The call's scalar id arguments, ``(name, value)``."""
    return [(k, str(v)) for k, v in call.arguments.items() if is_id_name(k) and _scalar(v)]


def clean_state(value: Any) -> Any:
    """``value`` without its volatile fields, at every depth."""
    if isinstance(value, dict):
        return {k: clean_state(v) for k, v in value.items() if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [clean_state(v) for v in value]
    return value


def _words(name: str) -> set[str]:
    return {w.lower() for w in re.split(r"[_\-\s.]+|(?<=[a-z0-9])(?=[A-Z])", name) if w}


def _named_by(field: str, tool: str) -> bool:
    """Whether an id field names what the tool is about: ``ticket_id`` for ``open_ticket``
    or ``get_customer_tickets``, ``booking_id`` for ``book_trip``; ``id`` always."""
    if field == "id":
        return True
    stem = ID_SUFFIX.sub("", field).lower()
    return any(
        stem == w or (len(w) >= 4 and stem.startswith(w)) or (len(stem) >= 4 and w.startswith(stem))
        for w in _words(tool)
    )


def own_id(obj: dict[str, Any], values: Collection[str], tool: str) -> tuple[str, str] | None:
    """The object's own id field, when the call passed not its value but another id
    field's: an id field named like what the tool is about (or ``id``) holding a value no
    argument held, beside one an argument did; where no id field is named like the tool, the
    object's first id field, when no argument held its value and the object's fields come in
    their own order (:func:`_ordered`). The object refers to what the call named and is keyed
    by its own id: ``open_ticket(customer_id="C-4")`` answering ``{"ticket_id": "TK-1",
    "customer_id": "C-4", "subject": …}`` is a ticket, and so it is answering ``op_7``."""
    return _own(_ids(obj), values, tool, _ordered(obj))


def _ids(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """The object's id fields and their values as text, in its order."""
    return [(k, str(v)) for k, v in obj.items() if is_id_name(k) and _scalar(v)]


#: Fields an object needs for the order of its keys to say which id is its own.
ORDERED_FIELDS = 3


def _ordered(obj: dict[str, Any]) -> bool:
    """Whether the object's fields come in the backend's own order: enough of them, and not
    sorted by name (an answer serialised with sorted keys says nothing by its order)."""
    keys = [str(k) for k in obj]
    return len(keys) >= ORDERED_FIELDS and keys != sorted(keys)


def _own(
    ids: list[tuple[str, str]], values: Collection[str], tool: str, ordered: bool = False
) -> tuple[str, str] | None:
    if not any(v in values for _, v in ids):
        return None
    named = [(k, v) for k, v in ids if _named_by(k, tool)]
    if named:
        return next(((k, v) for k, v in named if v not in values), None)
    # a name that says nothing of what the tool is about (``op_7``): an object whose fields
    # come in their own order puts its own id first, references to others after
    return ids[0] if ordered and ids[0][1] not in values else None


def _identity(
    obj: dict[str, Any], arguments: list[tuple[str, str]], single: bool, tool: str
) -> str | None:
    ids = _ids(obj)
    argument_values = {v for _, v in arguments}
    own = _own(ids, argument_values, tool, _ordered(obj))
    if own is not None:
        return entity_key(*own)
    for field, value in ids:
        if value in argument_values:
            return entity_key(field, value)
    for field, value in ids:
        if field == "id":
            return entity_key(field, value)
    if single and len(arguments) == 1 and not ids:
        return entity_key(*arguments[0])
    return entity_key(*ids[0]) if ids else None


def object_key(call: ToolCall, obj: dict[str, Any], single: bool) -> str | None:
    """The key :func:`answer_entities` gives ``obj`` (the whole answer when ``single``, else
    one of a list), without cleaning its state: for a caller that needs only the key."""
    return None if call.error else _identity(obj, id_arguments(call), single, call.name)


def answer_entities(call: ToolCall) -> list[tuple[str, State]]:
    """``(key, state)`` of each entity in the call's answer (none for an error)."""
    if call.error:
        return []
    payload = call.payload
    if isinstance(payload, dict):
        objects, single = [payload], True
    elif isinstance(payload, list) and payload and all(isinstance(p, dict) for p in payload):
        objects, single = payload, False
    else:
        return []
    arguments = id_arguments(call)
    found = []
    for obj in objects:
        key = _identity(obj, arguments, single, call.name)
        if key is not None:
            found.append((key, clean_state(obj)))
    return found


def canonical(state: Any) -> str:
    """One string per state: equal states, equal strings."""
    return json.dumps(state, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def state_diff(got: dict[str, Any], want: dict[str, Any], limit: int = 6) -> list[str]:
    """Where ``got`` differs from ``want``: ``"key: missing"``, ``"key: unexpected"`` or
    ``"key.field: got X, want Y"`` (top-level fields), at most ``limit`` lines."""
    lines = []
    for key in sorted(set(got) | set(want)):
        if key not in got:
            lines.append(f"{key}: missing")
        elif key not in want:
            lines.append(f"{key}: unexpected")
        elif canonical(got[key]) != canonical(want[key]):
            a, b = got[key], want[key]
            if isinstance(a, dict) and isinstance(b, dict):
                for field in sorted(set(a) | set(b)):
                    if canonical(a.get(field)) != canonical(b.get(field)):
                        shown_a = canonical(a.get(field))[:60]
                        shown_b = canonical(b.get(field))[:60]
                        lines.append(f"{key}.{field}: got {shown_a}, want {shown_b}")
            else:
                lines.append(f"{key}: got {canonical(a)[:60]}, want {canonical(b)[:60]}")
    return lines[:limit]
