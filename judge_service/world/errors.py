"""Errors in the form the real tool gave them, and when it gave them.

A condition is one the world can check: the entity the call names is ``missing`` (or a search
finds none); an argument is outside its schema's ``enum``; an argument names an id that no
object of the kinds it named in successful calls holds (``reference``); a field of the
entity the call names holds a value it never held in a successful call (``state``: a
cancellation refused for an order already delivered, where every cancellation that went
through found the order pending; only a field of a few values, each seen in more than one
success, is such a precondition). Each traced error
is put down to the first condition that holds for it, and its text becomes the condition's
template (the arguments' values as slots, the failing element of a list as ``bad``). A
condition that would have fired on a successful call is dropped. Errors no condition
explains are left to replay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.lookup import Index, find_object, locate
from judge_service.world.model import ErrorRule, Parts
from judge_service.world.observe import Step
from judge_service.world.text import fill, parts_of
from judge_service.world.values import MISSING, get_path, same

#: ``named(state, args)``: the state of the entity the call names, ``MISSING`` when the
#: state lacks it, ``None`` when the call does not name one.
Named = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
#: A ``state`` precondition's field takes at most this many values in successful calls.
MAX_ALLOWED = 4


def _values(given: Any) -> list[Any]:
    items = given if isinstance(given, list) else [given]
    return [v for v in items if isinstance(v, str | int) and not isinstance(v, bool)]


def _enum(parameters: Mapping[str, Any], name: str) -> list[Any] | None:
    spec = (parameters.get("parameters") or {}).get("properties", {}).get(name)
    enum = spec.get("enum") if isinstance(spec, dict) else None
    return enum if isinstance(enum, list) else None


def fires(
    rule: ErrorRule,
    state: Mapping[str, Any],
    args: Mapping[str, Any],
    named: Named | None,
    parameters: Mapping[str, Any],
    index: Index | None = None,
) -> tuple[bool, Any]:
    """Whether the rule's condition holds, and the failing element for ``reference``."""
    if rule.when == "missing":
        return bool(named and named(state, args) is MISSING), None
    if rule.when == "state":
        entity = named(state, args) if named else None
        value = get_path(entity, rule.field) if isinstance(entity, dict) else MISSING
        holds = value is not MISSING and not any(same(value, a) for a in rule.allowed)
        return holds, value if holds else None  # the value the text may name, as ``bad``
    given = args.get(rule.arg or "", MISSING)
    if given is MISSING:
        return False, None
    if rule.when == "enum":
        enum = _enum(parameters, rule.arg or "")
        return enum is not None and given not in enum, None
    for value in _values(given):
        if all(find_object(state, t, f, value, index) is MISSING for t, f in rule.refs):
            return True, value
    return False, None


def answer_error(
    rules: Sequence[ErrorRule],
    state: Mapping[str, Any],
    args: Mapping[str, Any],
    named: Named | None,
    parameters: Mapping[str, Any],
    index: Index | None = None,
) -> str | None:
    """The error text of the first rule whose condition holds (``None``: no error)."""
    for rule in rules:
        holds, bad = fires(rule, state, args, named, parameters, index)
        if holds:
            return fill(rule.template, args, bad)
    return None


def _references(steps: Sequence[Step], index: Index) -> list[ErrorRule]:
    """For each argument, the kinds of id its values were found as in every success."""
    found: list[ErrorRule] = []
    first = steps[0]
    for name, given in first.call.arguments.items():
        values = _values(given)
        if not values:
            continue
        kinds = {(t, f) for t, f, _ in locate(first.pre, values[0], index)}
        for step in steps:
            for value in _values(step.call.arguments.get(name)):
                kinds &= {(t, f) for t, f, _ in locate(step.pre, value, index)}
            if not kinds:
                break
        if kinds:
            found.append(ErrorRule(when="reference", arg=name, refs=sorted(map(list, kinds))))
    return found


def _preconditions(ok: Sequence[Step], named: Named | None) -> list[ErrorRule]:
    """A ``state`` rule for each scalar field of the named entity that took few values in
    the successful calls, each seen twice or more (a status, not a name or an amount)."""
    if named is None:
        return []
    seen: dict[str, list[Any]] = {}
    for step in ok:
        entity = named(step.pre, step.call.arguments)
        if not isinstance(entity, dict):
            return []  # a success whose entity is unknown: no field can be a precondition
        for field, value in entity.items():
            if isinstance(value, str | int | bool) or value is None:
                seen.setdefault(field, []).append(value)
    rules = []
    for field, values in seen.items():
        counts = Counter(canonical(v) for v in values)
        if len(values) == len(ok) and len(counts) <= MAX_ALLOWED and min(counts.values()) > 1:
            allowed = list({canonical(v): v for v in values}.values())
            rules.append(ErrorRule(when="state", field=[field], allowed=allowed))
    return rules


def learn_errors(
    steps: Sequence[Step], named: Named | None, parameters: Mapping[str, Any]
) -> list[ErrorRule]:
    """The tool's error rules, each checked against every traced call (module docstring)."""
    failed = [s for s in steps if s.call.error and s.call.answer is not None]
    if not failed:
        return []
    ok = [s for s in steps if not s.call.error]
    index = Index()
    rules = [ErrorRule(when="missing")]
    names = dict.fromkeys(n for s in steps for n in s.call.arguments)
    rules += [ErrorRule(when="enum", arg=n) for n in names if _enum(parameters, n) is not None]
    if ok:
        rules += _references(ok, index)
        rules += _preconditions(ok, named)
    counts: dict[int, Counter[str]] = {}
    parts_by: dict[str, Parts] = {}
    for step in failed:
        args = step.call.arguments
        for number, rule in enumerate(rules):
            holds, bad = fires(rule, step.pre, args, named, parameters, index)
            if holds:
                slot = (rule.arg or "", bad) if bad is not None else None
                parts = parts_of(step.call.answer or "", args, slot)
                parts_by[canonical(parts)] = parts
                counts.setdefault(number, Counter())[canonical(parts)] += 1
                break
    learned = []
    for number in sorted(counts):
        text, count = counts[number].most_common(1)[0]
        update = {"template": parts_by[text], "examples": count}
        learned.append(rules[number].model_copy(update=update))
    return [
        r
        for r in learned
        if not any(fires(r, s.pre, s.call.arguments, named, parameters, index)[0] for s in ok)
    ]
