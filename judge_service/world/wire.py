"""HTTP models of the world routes: the build request, a world's summary and its report.

Imports only ``judge_service.wire`` of the package. The report's inner shapes are those of
:mod:`judge_service.world.summary` (documented in ``docs/api.md``), passed through as JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints

from judge_service.wire import CONTROL_CHARACTERS, ModelSpec, _Strict

#: Printable, no control characters (PostgreSQL's text refuses NUL), bounded.
JobId = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=rf"^[^{CONTROL_CHARACTERS}]+$")
]
Name = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=rf"^[^{CONTROL_CHARACTERS}]+$")
]
Status = Literal["queued", "running", "done", "failed"]


class WorldBuild(_Strict):
    """``POST /v1/worlds``: the forge trace jobs whose traces the world learns from."""

    jobs: list[JobId] = Field(
        min_length=1, max_length=100, description="Forge job ids (traces jobs, done)."
    )
    name: Name | None = Field(
        default=None,
        description="A name to know it by (default: `world-` and the start of its id).",
    )
    simulator: ModelSpec | None = Field(
        default=None,
        description="The model that answers, in episodes, the tool calls nothing learned "
        "answers (path e); a reset may name another.",
    )
    user_model: ModelSpec | None = Field(
        default=None,
        description="The model that plays the user in episodes (else the traced user is "
        "replayed); a reset may name another.",
    )


class WorldSummary(BaseModel):
    id: str
    name: str
    status: Status
    jobs: list[str]
    counts: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="`jobs, traces, goals, goals_with_repeats, held_out_runs, entities, "
        "entity_types, tools, writes, usable_transitions, replays` (once built).",
    )
    models: dict[str, JsonValue] = Field(
        default_factory=dict, description="`simulator`, `user_model`: the episodes' models."
    )
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None


class WorldDetail(WorldSummary):
    path_letters: dict[str, str] = Field(
        default_factory=dict, description="Each answer path and its letter, (a) to (e)."
    )
    tools: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict,
        description="Per tool: `effect`, traced `calls`, `held_out_calls`, `paths` (each "
        "path's share of the held-out calls), and what was learned: `read`, `function`, "
        "`transitions` (entity, ops, examples, rejected), `errors`, `replays`; a tool only "
        "the user called: `caller: user` and `side_answers` (its traced answers kept).",
    )
    fidelity: dict[str, JsonValue] | None = Field(
        default=None,
        description="On the held-out runs, paths (a)-(d): `world` and `baseline` (exact-call "
        "replay) `{calls, answered, exact, f1}`, `ratio`, `by_path`, `by_tool`, `misses`; a rate "
        "is null where nothing was measured (no run held out, the baseline exact on none).",
    )


class WorldList(BaseModel):
    worlds: list[WorldSummary]
