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
5. where the name says nothing (``op_7``), what its text answers say, as a prior only: a
   tool whose successful text answers mostly announce a change in English ("Mobile Data is
   now OFF.", "Preferred Network Mode set to: 4g", "Payment of 65 USD has been made",
   "SIM card re-seated successfully") writes; one whose answers read as a hand-off
   ("Transfer successful") does not, for a hand-off changes nothing of the record. A
   state shown ("Data Saver mode is ON", "Airplane Mode: OFF") announces nothing. Without
   it, every device tool of τ²-bench telecom renamed ``op_<n>`` that its traces never show
   changing was a read (11 of 13);
6. read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judge_service.traces.calls import ToolCall
from judge_service.traces.change_evidence import Evidence, creations, trace_evidence

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

#: A hand-off to a human, in a tool's name or answer: it changes no record.
HANDOFF = re.compile(r"transfer|handoff|hand_off|escalat|human", re.IGNORECASE)
#: A text answer that announces a change it made (English phrasing; no tool's name).
ANNOUNCES_CHANGE = re.compile(
    r"\b(?:success(?:ful(?:ly)?)?|(?:has|have) been|(?:is|are) now|set to|sent|added|removed|"
    r"granted|revoked|created|deleted|updated|changed|cancell?ed|submitted|scheduled)\b",
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


def _answer_prior(calls: Sequence[ToolCall]) -> dict[str, Effect]:
    """Step 5 of the module docstring: each tool with successful text answers, ``write``
    where more than half of them announce a change, else ``read``."""
    said: dict[str, list[bool]] = {}
    for call in calls:
        answer = call.answer
        if call.error or not isinstance(answer, str) or call.payload is not None:
            continue
        said.setdefault(call.name, []).append(
            bool(ANNOUNCES_CHANGE.search(answer)) and not HANDOFF.search(answer)
        )
    return {
        name: "write" if 2 * sum(flags) > len(flags) else "read" for name, flags in said.items()
    }


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
    evidence = Evidence()
    every: list[ToolCall] = []
    for calls in traces:
        for call in calls:
            effects.setdefault(call.name, ToolEffect(call.name)).calls += 1
        trace_evidence(calls, evidence)
        every += calls
    creations(every, evidence)
    forced = {**{n: "read" for n in reads}, **{n: "write" for n in writes}}
    answered = _answer_prior(every)
    _decide(effects, evidence, forced, schema_effects, answered)
    # a change counted for none goes to the call that named the entity and showed it changed,
    # once none of the calls since the state before is a write (step 3 of the docstring)
    for tool, others in evidence.unexplained:
        if not any(effects[o].effect == "write" for o in others):
            evidence.add(evidence.changed, tool)
    if evidence.unexplained:
        _decide(effects, evidence, forced, schema_effects, answered)
    for name in forced:
        effects.setdefault(name, ToolEffect(name, forced[name], "override"))  # type: ignore[arg-type]
    return dict(sorted(effects.items()))


def _decide(
    effects: dict[str, ToolEffect],
    evidence: Evidence,
    forced: Mapping[str, str],
    schema_effects: Mapping[str, Effect | None],
    answered: Mapping[str, Effect],
) -> None:
    """Each tool's class from the override, its schema, the evidence, its name or its
    answers, in order."""
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
        elif name in answered:
            effect.effect, effect.source = answered[name], "answers"


def write_tools(effects: Mapping[str, ToolEffect]) -> frozenset[str]:
    return frozenset(n for n, e in effects.items() if e.effect == "write")
