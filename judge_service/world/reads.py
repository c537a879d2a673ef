"""(a) Reads: which entities a read tool picks, and what of them it answers.

Learned from the tool's answered calls, and kept only if every example fits:

- ``key``: the answer is the entity whose id an argument holds (``get_order(order_id)``),
  or one field of it;
- ``search``: the first entity whose fields equal the arguments (``find_user(email)``),
  answered whole or as its id;
- ``filter``: every entity of a type whose fields equal the arguments, as a list.

An entity answered whole is cut to the fields the tool was seen to show.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from judge_service.world.lookup import of_type
from judge_service.world.model import ReadRule, ToolModel
from judge_service.world.observe import Step
from judge_service.world.text import as_text
from judge_service.world.values import MISSING, get_path, render, same

MAX_DEPTH = 3


def paths_to(value: Any, target: Any, depth: int = 0) -> Iterator[list[Any]]:
    """Every path in ``value`` whose leaf equals ``target``."""
    if depth <= MAX_DEPTH and isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(item, dict | list) and same(item, target):
                yield [key]
            for path in paths_to(item, target, depth + 1):
                yield [key, *path]


def project(entity: Any, fields: Sequence[str]) -> Any:
    if fields and isinstance(entity, dict) and set(entity) - set(fields):
        return {k: v for k, v in entity.items() if k in fields}
    return entity


def _fits(entity: Any, match: Mapping[str, list[Any]], args: Mapping[str, Any]) -> bool:
    return all(
        name in args and same(get_path(entity, path), args[name]) for name, path in match.items()
    )


def select(rule: ReadRule, state: Mapping[str, Any], args: Mapping[str, Any]) -> list[str] | None:
    """The keys the read picks (empty: none found; ``None``: the call lacks an argument)."""
    if rule.select == "key":
        if rule.arg is None or rule.arg not in args or isinstance(args[rule.arg], dict | list):
            return None
        key = f"{rule.entity}={as_text(args[rule.arg])}"
        return [key] if key in state else []
    if any(name not in args for name in rule.match):
        return None
    found = [k for k, v in of_type(state, rule.entity) if _fits(v, rule.match, args)]
    return found[:1] if rule.select == "search" else found


def read_value(rule: ReadRule, tool: ToolModel, state: Mapping[str, Any], keys: list[str]) -> Any:
    """The answer's value for the picked ``keys`` (``MISSING`` if a field is absent)."""
    if rule.select == "filter":
        return [project(state[k], tool.fields) for k in keys]
    key = keys[0]
    if rule.output == "key":
        return key.split("=", 1)[1]
    if rule.output == "field":
        return get_path(state[key], rule.field)
    return project(state[key], tool.fields)


def _holds(rule: ReadRule, tool: ToolModel, steps: Sequence[Step]) -> bool:
    for step in steps:
        keys = select(rule, step.pre, step.call.arguments)
        if keys is None:
            return False
        if rule.select == "filter":
            if sorted(keys) != sorted(k for k, _ in step.shown):
                return False
            continue
        if not keys:  # a search that finds nothing where the traced call found something
            return False
        if rule.output == "entity":
            if [k for k, _ in step.shown] != [f"{rule.entity}={keys[0].split('=', 1)[1]}"]:
                return False
            continue
        value = read_value(rule, tool, step.pre, keys)
        if (
            value is MISSING
            or render(value, tool.format).strip() != (step.call.answer or "").strip()
        ):
            return False
    return True


def _matching(entity: Any, args: Mapping[str, Any]) -> dict[str, list[Any]] | None:
    match = {}
    for name, value in args.items():
        found = next(paths_to(entity, value), None)
        if found is None:
            return None
        match[name] = found
    return match


def _proposals(step: Step) -> Iterator[ReadRule]:
    args, payload = step.call.arguments, step.call.payload
    if isinstance(payload, list):
        if step.shown:
            entity = step.shown[0][0].split("=", 1)[0]
            match = _matching(step.shown[0][1], args)
            if match is not None:
                yield ReadRule(select="filter", entity=entity, match=match)
        return
    if len(step.shown) == 1:
        key, state = step.shown[0]
        entity, value = key.split("=", 1)
        for name, given in args.items():
            if as_text(given) == value:
                yield ReadRule(select="key", entity=entity, arg=name)
        match = _matching(state, args)
        if match:
            yield ReadRule(select="search", entity=entity, match=match)
        return
    text = (step.call.answer or "").strip()
    named = {as_text(v): n for n, v in args.items() if not isinstance(v, dict | list)}
    for key, state in step.pre.items():
        entity, value = key.split("=", 1)
        if value == text:
            match = _matching(state, args)
            if match:
                yield ReadRule(select="search", entity=entity, match=match, output="key")
        elif value in named and isinstance(state, dict):
            for path in paths_to(state, text):
                yield ReadRule(
                    select="key", entity=entity, arg=named[value], output="field", field=path
                )


def learn_read(tool: ToolModel, steps: Sequence[Step]) -> ReadRule | None:
    """The first read rule that every answered call of the tool fits."""
    answered = [s for s in steps if not s.call.error and s.call.answer is not None]
    if not answered:
        return None
    tried: set[str] = set()
    for step in answered[:3]:
        for rule in _proposals(step):
            name = rule.model_dump_json()
            if name in tried:
                continue
            tried.add(name)
            if _holds(rule, tool, answered):
                return rule.model_copy(update={"examples": len(answered)})
    return None
