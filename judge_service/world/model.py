"""The world's stored shapes: what was learned of each tool, and what an answer is.

Everything here is plain data (pydantic) that serialises to JSON and loads back equal, so a
world built once can be stored and served. The learning lives in the modules that fill these
in; :mod:`judge_service.world.engine` reads them to answer a call.

Paths (how an answer was produced), in the order they are tried:

- ``read`` (a): from the current entity state, shaped as the tool answered before;
- ``transition`` (b): a write's change learned from the traces, applied to the state;
- ``function`` (c): a constant, a template of the arguments, arithmetic, or a table of
  answers that the traces pin down whatever the state;
- ``replay`` (d): the traced answer of the same call in the same state;
- ``model_needed`` (e): none of the above; a model has to answer.

One more path is no path of the world's (not in :data:`PATHS`): ``recorded``, a replayed
trajectory's write whose answer is the recording's, where the world and the recording
disagree (:mod:`judge_service.world.trajectory`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AnswerPath = Literal["read", "transition", "function", "replay", "model_needed", "recorded"]
#: The world's own paths, in the order they are tried.
PATHS: tuple[AnswerPath, ...] = ("read", "transition", "function", "replay", "model_needed")
#: The issue's letters for each path.
PATH_LETTERS = dict(zip(PATHS, "abcde", strict=True))

#: A text template: ``[["text", "Error: "], ["arg", "order_id"], ["bad", "item_ids"]]``
#: (``bad``: the element of a list argument that made the call fail).
Parts = list[list[str]]
#: A value expression (:mod:`judge_service.world.expr`), a tagged JSON object.
Expr = dict[str, Any]
#: The argument name under which a write that creates an entity sees the new id (no tool's
#: argument can be named so: ``@`` is not a name character).
NEW_ID = "@new"


class Call(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Replaying a recorded call: the id its answer gave the entity it created, so that
    #: the trajectory's later calls find it. Otherwise a write that creates makes a new id.
    created: str | None = None


class Answer(BaseModel):
    """A tool's answer: ``text`` as the tool writes it (``None`` when a model is needed),
    ``payload`` the parsed object or list (else the text), and the state it leaves."""

    model_config = ConfigDict(frozen=True)

    text: str | None
    payload: Any
    path: AnswerPath
    error: bool = False
    #: The state after the call: the state it was asked in when it changed nothing (answers
    #: copy only what they change; a world's build asks in a trace's layered state).
    state_after: Mapping[str, Any]
    note: str = ""


class ReadRule(BaseModel):
    """How a read picks entities (``key``: the one whose id an argument holds; ``search``:
    the first whose fields equal the arguments; ``filter``: all of them, as a list) and
    what it answers (the entity, its id value, or one field of it)."""

    select: Literal["key", "search", "filter"]
    entity: str
    arg: str | None = None
    match: dict[str, list[Any]] = Field(default_factory=dict)
    output: Literal["entity", "key", "field"] = "entity"
    field: list[Any] = Field(default_factory=list)
    examples: int = 0


class Op(BaseModel):
    """One learned change of an entity at ``path`` (a part may be ``{"arg": name}``: the
    key is the argument's value). Kinds: ``set``, ``unset``, ``shift`` (add ``sign`` x
    ``expr``), ``append``, ``extend`` (a list argument), ``map_append`` (an element per
    existing element that ``where`` selects), ``remove`` (elements whose ``where.field``
    the argument ``where.arg`` names), ``update_where`` (``ops`` on the elements that
    argument names), ``either`` (``ops[0]`` where the number ``expr`` is at least 0, above
    0 with ``where.strict``; else ``ops[1]``)."""

    kind: Literal[
        "set",
        "unset",
        "shift",
        "append",
        "extend",
        "map_append",
        "remove",
        "update_where",
        "either",
    ]
    path: list[Any]
    expr: Expr | None = None
    sign: int = 1
    where: dict[str, Any] | None = None
    ops: list[Op] = Field(default_factory=list)


class Binding(BaseModel):
    """Which entity a write changes: ``<entity>=<argument arg>``, or
    ``<entity>=<the value at via in the first effect's entity>``. The argument ``@new``
    (:data:`NEW_ID`) is the id of the entity the call creates."""

    entity: str
    arg: str | None = None
    via: list[Any] | None = None


class Effect(BaseModel):
    """The change a write makes to one bound entity, checked against every example.
    ``unexplained``: fields no rule explains (the effect is not used); ``clock``: fields that
    record when (``updated_at``) that no rule explains, left as they were."""

    binding: Binding
    ops: list[Op] = Field(default_factory=list)
    unexplained: list[str] = Field(default_factory=list)
    clock: list[str] = Field(default_factory=list)
    examples: int = 0
    changed: int = 0
    rejected: int = 0


class Transition(BaseModel):
    """A write's learned effects (the first is the entity the call names) and its answer:
    the changed entity, a template, or unknown (``none``)."""

    effects: list[Effect] = Field(default_factory=list)
    answer: Literal["entity", "template", "none"] = "none"
    template: Parts = Field(default_factory=list)
    unbound: int = 0
    #: Ids the traced calls gave the entities they created (when the first effect's
    #: binding is :data:`NEW_ID`): the shape of a new one.
    new_ids: list[str | int] = Field(default_factory=list)

    @property
    def creates(self) -> bool:
        return bool(self.effects) and self.effects[0].binding.arg == NEW_ID

    @property
    def usable(self) -> bool:
        """Whether the call's own entity and its answer are fully explained."""
        return bool(self.effects) and not self.effects[0].unexplained and self.answer != "none"


class FunctionRule(BaseModel):
    """(c): a ``template`` of the arguments (a constant has no slots), ``arithmetic`` over
    one argument written with ``number_format``, or a ``table`` of answers by arguments."""

    kind: Literal["template", "arithmetic", "table"]
    template: Parts = Field(default_factory=list)
    arg: str | None = None
    number_format: str | None = None
    table: dict[str, str] = Field(default_factory=dict)


class ErrorRule(BaseModel):
    """An error the tool gave, and when: the entity it names is ``missing``, an argument
    is outside its schema's ``enum``, an argument names no ``reference`` that the world
    holds (an object, in an entity of a type in ``refs``, with that id field), or a ``state``
    field of the entity it names holds none of the values ``allowed``."""

    when: Literal["missing", "enum", "reference", "state"]
    arg: str | None = None
    refs: list[list[str]] = Field(default_factory=list)
    #: ``state``: the named entity's field, and the values it held in successful calls.
    field: list[Any] = Field(default_factory=list)
    allowed: list[Any] = Field(default_factory=list)
    template: Parts = Field(default_factory=list)
    examples: int = 0


class Replay(BaseModel):
    """(d): a traced answer and the entity states the call left."""

    text: str
    error: bool = False
    effects: dict[str, Any] = Field(default_factory=dict)


class SideAnswer(BaseModel):
    """One traced call of a user tool: its arguments (canonical JSON), its answer, and the
    successful writes its run had made before it (``tool:arguments``, sorted)."""

    arguments: str
    text: str
    error: bool = False
    before: list[str] = Field(default_factory=list)
    #: The traces it was made in (the first :data:`~judge_service.world.user_side.
    #: TRACES_KEPT`): a task's own runs show how its user's side started.
    traces: list[str] = Field(default_factory=list)
    #: The user's side as its run had seen it before the call (field -> value).
    side: dict[str, str] = Field(default_factory=dict)
    #: The entity states a successful write left (most change none: only the user's side).
    effects: dict[str, Any] = Field(default_factory=dict)


class ToolModel(BaseModel):
    name: str
    effect: Literal["read", "write"] = "read"
    #: Who called it in the traces: ``user`` when only the user did (a tool on the user's
    #: own side, their phone or account app); the agent is never offered or answered one.
    caller: Literal["agent", "user"] = "agent"
    calls: int = 0
    errors_seen: int = 0
    format: str = "json"
    parameters: dict[str, Any] = Field(default_factory=dict)
    fields: list[str] = Field(default_factory=list)
    read: ReadRule | None = None
    transition: Transition | None = None
    function: FunctionRule | None = None
    errors: list[ErrorRule] = Field(default_factory=list)
    replays: dict[str, Replay] = Field(default_factory=dict)
    #: Traced calls with distinct arguments and their answers, for (e): a model answering a
    #: call is shown the most similar of them.
    examples: list[dict[str, Any]] = Field(default_factory=list)
    #: A user tool's traced calls with the writes made before each
    #: (:mod:`judge_service.world.user_side`).
    side: list[SideAnswer] = Field(default_factory=list)


class TraceStart(BaseModel):
    """A trace's entities, and the first states it saw that differ from the world's base."""

    keys: list[str] = Field(default_factory=list)
    overrides: dict[str, Any] = Field(default_factory=dict)


Op.model_rebuild()
