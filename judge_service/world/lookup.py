"""Looking things up in a world state: entities of a type, and objects by their ids.

A state maps entity keys (``order_id=#W1``) to their JSON states. An id may also name an
object inside an entity (a catalogue variant inside a product), so lookups walk into them.
:class:`Ctx` is what an expression may read when it is evaluated.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from judge_service.traces.entities import is_id_name
from judge_service.world.text import as_text
from judge_service.world.values import MISSING, same

Found = list[tuple[str, str, dict[str, Any]]]  # (entity key, id field, object)


@dataclass
class Index:
    """Learning's cache of where ids are: per entity and per mapping of entities (by
    identity, each kept alive so that its id is not reused; a mapping that changed size is
    indexed again). States are read, never changed, while learning."""

    roots: dict[int, tuple[Any, dict[Any, list[tuple[str, dict[str, Any]]]]]] = field(
        default_factory=dict
    )
    maps: dict[int, tuple[Mapping[str, Any], int, dict[Any, Found]]] = field(default_factory=dict)


@dataclass
class Ctx:
    """What an expression may read: the call's arguments, the entity before the change,
    the whole state, the current list element and its index among a list argument's."""

    args: Mapping[str, Any]
    pre: Any = None
    state: Mapping[str, Any] = field(default_factory=dict)
    elem: Any = MISSING
    j: int | None = None
    index: Index | None = None

    def at(self, elem: Any, j: int | None) -> Ctx:
        return Ctx(self.args, elem, self.state, elem, j, self.index)


def of_type(state: Mapping[str, Any], entity: str) -> Iterator[tuple[str, Any]]:
    """``(key, state)`` of every entity of a type, in the state's order."""
    prefix = f"{entity}="
    return ((k, state[k]) for k in state if k.startswith(prefix))


def _objects(value: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    if depth > 4:
        return
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _objects(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item, depth + 1)


def _find_in(root: Any, id_field: str, value: Any) -> Any:
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if id_field in item and same(item[id_field], value):
                return item
            stack.extend(v for v in reversed(item.values()) if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in reversed(item) if isinstance(v, dict | list))
    return MISSING


def find_object(
    state: Mapping[str, Any], entity: str, id_field: str, value: Any, index: Index | None = None
) -> Any:
    """The first object inside an entity of type ``entity`` whose ``id_field`` is ``value``
    (the entity itself when that is its key); ``index`` spares walking the entities."""
    if id_field == entity and isinstance(value, str | int) and not isinstance(value, bool):
        root = state.get(f"{entity}={as_text(value)}", MISSING)
        if root is not MISSING:
            return root
    for key, root in of_type(state, entity):
        if index is not None and (is_id_name(id_field) or id_field == entity):
            hits = [o for name, o in _ids(key, root, index).get(value, ()) if name == id_field]
            found = hits[0] if hits else MISSING
        else:
            found = _find_in(root, id_field, value)
        if found is not MISSING:
            return found
    return MISSING


def _ids(key: str, root: Any, index: Index) -> dict[Any, list[tuple[str, dict[str, Any]]]]:
    cached = index.roots.get(id(root))
    if cached is not None and cached[0] is root:
        return cached[1]
    own = key.split("=", 1)[0]
    by_value: dict[Any, list[tuple[str, dict[str, Any]]]] = {}
    for obj in _objects(root):
        for name, item in obj.items():
            named = is_id_name(name) or name == own
            if named and isinstance(item, str | int) and not isinstance(item, bool):
                by_value.setdefault(item, []).append((name, obj))
    index.roots[id(root)] = (root, by_value)
    return by_value


def _inverted(mapping: Mapping[str, Any], index: Index) -> dict[Any, Found]:
    cached = index.maps.get(id(mapping))
    if cached is not None and cached[0] is mapping and cached[1] == len(mapping):
        return cached[2]
    inverted: dict[Any, Found] = {}
    for key in mapping:
        for value, objects in _ids(key, mapping[key], index).items():
            inverted.setdefault(value, []).extend((key, name, obj) for name, obj in objects)
    index.maps[id(mapping)] = (mapping, len(mapping), inverted)
    return inverted


def locate(state: Mapping[str, Any], value: Any, index: Index) -> Found:
    """``(entity type, id field, object)`` of every object holding ``value`` in an id field
    (or in its entity's own key field)."""
    if not isinstance(value, str | int) or isinstance(value, bool):
        return []
    maps = state.maps if isinstance(state, ChainMap) else [state]
    found: Found = []
    for number, mapping in enumerate(maps):
        for key, name, obj in _inverted(mapping, index).get(value, ()):
            if not any(key in earlier for earlier in maps[:number]):
                found.append((key.split("=", 1)[0], name, obj))
    return found


def matches(elem: Any, field: str | None, value: Any) -> bool:
    got = (
        elem if field is None else (elem.get(field, MISSING) if isinstance(elem, dict) else MISSING)
    )
    return got is not MISSING and same(got, value)


def pair_up(
    items: list[Any], field: str | None, wanted: Any
) -> list[tuple[int, int | None]] | None:
    """``(element index, argument index)`` of the elements an argument names: each value of a
    list argument takes the first element not yet taken whose ``field`` holds it (``None``
    if one finds none); a scalar argument takes every element that holds it."""
    if not isinstance(wanted, list):
        return [(i, None) for i, e in enumerate(items) if matches(e, field, wanted)]
    pairs: list[tuple[int, int | None]] = []
    for j, value in enumerate(wanted):
        taken = {i for i, _ in pairs}
        index = next(
            (i for i, e in enumerate(items) if i not in taken and matches(e, field, value)), None
        )
        if index is None:
            return None
        pairs.append((index, j))
    return pairs


def merge(old: Any, new: Any) -> Any:
    """An entity after being seen as ``new``. A view that shows all its fields is the entity.
    A view that leaves some out (fewer fields, or others beside some of them: a usage view of
    a line) updates the fields it shows and keeps the rest, and a value it writes as text
    (``"3.2"`` for ``3.2``) leaves the value as it was: a view is not a change."""
    if not (isinstance(old, dict) and isinstance(new, dict)) or set(old) <= set(new):
        return new
    kept = {k: old[k] for k, v in new.items() if k in old and _as_text_of(old[k], v)}
    return {**old, **new, **kept}


def _as_text_of(old: Any, new: Any) -> bool:
    """Whether ``new`` is the scalar ``old`` written as text."""
    return (
        isinstance(new, str)
        and not isinstance(old, str | dict | list)
        and old is not None
        and as_text(old) == new
    )


def argument_values(arguments: Mapping[str, Any]) -> set[str]:
    """Every scalar the arguments hold, as text (list elements too)."""
    out: set[str] = set()
    for value in arguments.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | int) and not isinstance(item, bool):
                out.add(as_text(item))
    return out
