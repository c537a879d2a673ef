"""Which tools read and which change state, from the schemas and from what the traces show.

In order, the first that speaks decides:

1. the request's override (``tools.writes``, and ``tools.reads``);
2. the tool's schema: ``"x-effect": "read" | "write"`` (on the tool or its ``function``), or
   MCP's ``annotations.readOnlyHint`` / ``destructiveHint``;
3. evidence: every time an entity's state is seen to change between two observations, the
   change goes to the last call in between that named the entity (its id argument), else,
   when no call came in between, to the call whose answer showed the new state. A change
   that other, unnamed calls could have made (a refund to the customer's balance names the
   order, not the customer) is counted for none: a read that shows what an earlier write
   changed stays a read. Once every tool has a class, such a change goes to the call that
   showed it after all, where that call named the entity itself, a field both states show
   holds another value (numbers compared as numbers, however typed), and none of the calls
   since the state before is a write: the exchange that answers the order it changed, after a
   read of the catalogue. Without it, a write whose name says nothing (``op_3``) and whose
   agent looked something else up first was left a read. A tool with at least as many changes as
   unchanged observations is a write; one seen only leaving entities as they were is a read.
   An answer that shows no record (text: "Airplane mode is now OFF") is a view of its call's
   name and arguments: the same call answered otherwise than last time was changed by the
   one call between them (or, with none, by itself), answered alike it changed nothing.
   A call that, given the same arguments in two traces, answered two different objects whose
   ids no argument held made them: one change (a ticket opened twice for the same subject);
4. the name, as a prior only (``get_``, ``search_``, a question such as ``can_…`` or
   ``is_…`` read; ``update_``, ``cancel_`` write);
5. read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from judge_service.traces.calls import ToolCall
from judge_service.traces.entities import answer_entities, canonical, entity_key, id_arguments

Effect = Literal["read", "write"]
WRITE_WORDS = re.compile(
    r"(^|_|-|\b)(create|add|update|modify|change|edit|set|cancel|delete|remove|book|reserve|"
    r"return|exchange|refund|send|submit|place|pay|charge|assign|close|upgrade|downgrade|"
    r"insert|write|save|apply|issue|register|post|put|patch|approve|reject|freeze|unfreeze|"
    r"block|unblock|lock|unlock|activate|deactivate|enable|disable|grant|revoke|open|schedule|"
    r"toggle|reset|reboot|restart|reseat|connect|disconnect|refuel|resume|suspend|renew|"
    r"install|uninstall|switch|turn|move)",
    re.IGNORECASE,
)
#: A read's verbs, and a name that asks a yes/no question (``can_send_mms``, ``is_eligible``):
#: it asks whether something may be done, and does not do it.
READ_WORDS = re.compile(
    r"^(get|find|search|list|lookup|look_up|read|fetch|check|calculate|compute|think|show|"
    r"view|describe|query|retrieve|count|validate|verify|"
    r"(?:can|is|are|has|have|does|do|should|will)[_-])",
    re.IGNORECASE,
)


@dataclass
class ToolEffect:
    """A tool's class, what decided it, and the evidence counted for it."""

    name: str
    effect: Effect = "read"
    source: str = "default"
    calls: int = 0
    changed: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "effect": self.effect,
            "source": self.source,
            "calls": self.calls,
            "changed": self.changed,
            "unchanged": self.unchanged,
        }


@dataclass
class _Evidence:
    changed: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    #: Changes counted for none (``_trace_evidence``), each as the call that showed the new
    #: state, having named the entity itself, and the tools called since the state before.
    unexplained: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def add(self, counts: dict[str, int], tool: str) -> None:
        counts[tool] = counts.get(tool, 0) + 1


def _trace_evidence(calls: Sequence[ToolCall], evidence: _Evidence) -> None:
    seen: dict[str, str] = {}  # entity key -> canonical last state
    last: dict[str, Any] = {}  # entity key -> last state
    seen_at: dict[str, int] = {}  # entity key -> position of the call that showed it last
    since: dict[str, list[ToolCall]] = {}  # entity key -> calls naming it since that state
    done = [c for c in calls if not c.error]
    views: dict[str, tuple[str, int]] = {}  # a call's name and arguments -> its last answer
    for position, call in enumerate(done):
        states = answer_entities(call)
        shown = {key for key, _ in states}
        for key, state in states:
            now = canonical(state)
            between = [c for c in since.get(key, []) if c.index != call.index]
            if key in seen and seen[key] != now:
                if between:
                    evidence.add(evidence.changed, between[-1].name)
                elif seen_at[key] == position - 1:
                    evidence.add(evidence.changed, call.name)
                elif _field_changed(last[key], state) and key in {
                    entity_key(n, v) for n, v in id_arguments(call)
                }:
                    others = frozenset(c.name for c in done[seen_at[key] + 1 : position])
                    evidence.unexplained.append((call.name, others))
            elif key in seen:
                for tool in {c.name for c in between} | {call.name}:
                    evidence.add(evidence.unchanged, tool)
            seen[key], seen_at[key], since[key], last[key] = now, position, [], state
        for name, value in id_arguments(call):
            key = entity_key(name, value)
            if key not in shown:
                since.setdefault(key, []).append(call)
        if not states and call.answer:
            _view_evidence(call, position, done, views, evidence)


def _view_evidence(
    call: ToolCall,
    position: int,
    done: Sequence[ToolCall],
    views: dict[str, tuple[str, int]],
    evidence: _Evidence,
) -> None:
    """Evidence from an answer that shows no record (a device's "Airplane mode is OFF"):
    the same call answered otherwise than last time changed, with one call between them,
    by that call, or, with none, by itself; answered alike, it changed nothing."""
    view = f"{call.name}({canonical(call.arguments)})"
    answer = (call.answer or "").strip()
    if view in views:
        before, at = views[view]
        if before == answer:
            evidence.add(evidence.unchanged, call.name)
        elif at == position - 1:
            evidence.add(evidence.changed, call.name)
        elif at == position - 2:
            evidence.add(evidence.changed, done[position - 1].name)
    views[view] = (answer, position)


def _loose(value: Any) -> Any:
    """``value`` with numbers as floats, however written (``3.2``, ``"3.2"``, ``0`` and
    ``0.0`` are one value): two tools may show one field in other types."""
    if isinstance(value, dict):
        return {k: _loose(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_loose(v) for v in value]
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _field_changed(before: Any, after: Any) -> bool:
    """Whether a field both states show holds another value: two reads of one record that
    show other fields of it, or the same in other types (a line's details, then its data
    usage), changed nothing."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return canonical(_loose(before)) != canonical(_loose(after))
    shared = before.keys() & after.keys()
    return any(canonical(_loose(before[k])) != canonical(_loose(after[k])) for k in shared)


def _made(call: ToolCall) -> str | None:
    """The key of the one object a call answered, when no argument holds its id (``None``
    otherwise): with the same arguments, a read finds the same such object again, a call
    that creates makes another each time."""
    if call.error or not isinstance(call.payload, dict):
        return None
    states = answer_entities(call)
    if len(states) != 1:
        return None
    key = states[0][0]
    return None if key.split("=", 1)[1] in {v for _, v in id_arguments(call)} else key


def _creations(calls: Iterable[ToolCall], evidence: _Evidence) -> None:
    """A change for each set of arguments that a tool answered with different new objects
    (an ``open_ticket`` of the same subject giving ``TK-1`` in one run, ``TK-7`` in another)."""
    made: dict[tuple[str, str], set[str]] = {}
    for call in calls:
        key = _made(call)
        if key is not None:
            made.setdefault((call.name, canonical(call.arguments)), set()).add(key)
    for (tool, _), keys in made.items():
        if len(keys) > 1:
            evidence.add(evidence.changed, tool)


def _schema_effect(tool: Mapping[str, Any]) -> Effect | None:
    function = tool.get("function") if isinstance(tool.get("function"), dict) else {}
    for place in (tool, function):
        declared = place.get("x-effect")
        if declared in ("read", "write"):
            return declared
        annotations = place.get("annotations")
        if isinstance(annotations, dict):
            if annotations.get("readOnlyHint") is True:
                return "read"
            if annotations.get("readOnlyHint") is False or annotations.get("destructiveHint"):
                return "write"
    return None


def tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    name = function.get("name")
    return name if isinstance(name, str) and name else None


def name_prior(name: str) -> Effect | None:
    if READ_WORDS.search(name):
        return "read"
    if WRITE_WORDS.search(name):
        return "write"
    return None


def classify_tools(
    traces: Iterable[Sequence[ToolCall]],
    schemas: Iterable[Any] = (),
    *,
    writes: Iterable[str] = (),
    reads: Iterable[str] = (),
) -> dict[str, ToolEffect]:
    """Every tool named by a schema or a call, classified (see the module docstring)."""
    effects: dict[str, ToolEffect] = {}
    schema_effects: dict[str, Effect | None] = {}
    for tool in schemas:
        name = tool_name(tool)
        if name is not None:
            effects.setdefault(name, ToolEffect(name))
            schema_effects[name] = schema_effects.get(name) or _schema_effect(tool)
    evidence = _Evidence()
    every: list[ToolCall] = []
    for calls in traces:
        for call in calls:
            effects.setdefault(call.name, ToolEffect(call.name)).calls += 1
        _trace_evidence(calls, evidence)
        every += calls
    _creations(every, evidence)
    forced = {**{n: "read" for n in reads}, **{n: "write" for n in writes}}
    _decide(effects, evidence, forced, schema_effects)
    # a change counted for none goes to the call that named the entity and showed it changed,
    # once none of the calls since the state before is a write (step 3 of the docstring)
    for tool, others in evidence.unexplained:
        if not any(effects[o].effect == "write" for o in others):
            evidence.add(evidence.changed, tool)
    if evidence.unexplained:
        _decide(effects, evidence, forced, schema_effects)
    for name in forced:
        effects.setdefault(name, ToolEffect(name, forced[name], "override"))  # type: ignore[arg-type]
    return dict(sorted(effects.items()))


def _decide(
    effects: dict[str, ToolEffect],
    evidence: _Evidence,
    forced: Mapping[str, str],
    schema_effects: Mapping[str, Effect | None],
) -> None:
    """Each tool's class from the override, its schema, the evidence or its name, in order."""
    for name, effect in effects.items():
        effect.changed = evidence.changed.get(name, 0)
        effect.unchanged = evidence.unchanged.get(name, 0)
        prior = name_prior(name)
        if name in forced:
            effect.effect, effect.source = forced[name], "override"  # type: ignore[assignment]
        elif schema_effects.get(name):
            effect.effect, effect.source = schema_effects[name], "schema"  # type: ignore[assignment]
        elif effect.changed and effect.changed >= effect.unchanged:
            effect.effect, effect.source = "write", "evidence"
        elif effect.unchanged:
            effect.effect, effect.source = "read", "evidence"
        elif prior is not None:
            effect.effect, effect.source = prior, "name"


def write_tools(effects: Mapping[str, ToolEffect]) -> frozenset[str]:
    return frozenset(n for n, e in effects.items() if e.effect == "write")
