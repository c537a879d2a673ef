"""What each feature adds to the service, and where the app, the worker and the CLI find it.

A feature declares itself once, in its own ``feature.py``: its HTTP routers, what it sets
up on the app, its job kinds (the task the routes send, the function a worker runs, the
table the sweepers watch), what runs after a batch is scored, and its CLI commands. The
declarations are found through the ``judge_service.features`` entry-point group
(``pyproject.toml``), so the core imports no feature and adding one touches no core file.

Everything a declaration names is a ``"module:attribute"`` string, imported when first
needed: a worker that only scores never imports the forge's scikit-learn, and the API never
imports a job.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import Any

#: The entry-point group the features are declared in.
GROUP = "judge_service.features"


def load(target: str) -> Any:
    """The object a ``"module:attribute"`` string names."""
    module, _, attribute = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        found = getattr(found, part)
    return found


@dataclass(frozen=True)
class JobKind:
    """A kind of background job: a row in its table, run by one task."""

    #: The kind's name, as the sweepers report it ("forge").
    name: str
    #: The task name the routes send and the worker registers.
    task: str
    #: ``"module:function"``: ``function(job_id, *, settings) -> str`` runs one job.
    run: str
    #: ``"module:Row"``: the job table (``id``, ``status``, ``created_at``, ``dispatched_at``).
    table: str


@dataclass(frozen=True)
class Feature:
    """One feature's declaration."""

    name: str
    #: Routers tried first on every request (a GRPO step's rewards, an episode's steps).
    hot_routers: Sequence[str] = ()
    #: The other routers, ``"module:router"``.
    routers: Sequence[str] = ()
    #: ``"module:function"``: ``function(app, settings)`` sets up what the routes need on
    #: the app (state, hand-written hot routes).
    setup_app: str | None = None
    #: ``"module:function"``: ``function(settings)``, as the app starts and stops (the
    #: local judge's build in the background).
    on_start: str | None = None
    on_stop: str | None = None
    #: ``(key, "module:function")`` pairs: ``function(settings) -> str`` says what
    #: ``/readyz`` shows under ``key`` (not a check: the service is ready without it).
    status: Sequence[tuple[str, str]] = ()
    jobs: Sequence[JobKind] = ()
    #: ``"module:function"``: ``function(batch_id, *, settings, registry, after_scored)``
    #: scores a leased batch. One feature scores batches.
    score_batch: str | None = None
    #: ``"module:factory"``: ``factory(settings)`` gives ``hook(batch_id)`` (or None),
    #: called once a batch is scored.
    after_batch: str | None = None
    #: ``(item kind, "module:function")`` pairs: ``function(*, session, payload, decision)
    #: -> str | None`` applies a reviewer's decision on an item of that kind the feature
    #: queued, and says its outcome. Named here so the review queue imports no feature above it.
    review_decisions: Sequence[tuple[str, str]] = ()
    #: ``"module:function"``: ``function(batch_id, *, database_url) -> bool`` masks an
    #: overdue batch's unscored samples and marks it done.
    expire_batch: str | None = None
    #: ``"module:function"``: ``function(settings)``, run as a worker starts, before it
    #: forks and before the first deadline (the model client, which imports litellm).
    prepare_worker: str | None = None
    #: ``"module:function"``: ``function(cli)`` adds the feature's commands.
    commands: str | None = None
    #: Features this one's setup or commands build on (their ``name``s): composed first.
    after: Sequence[str] = field(default_factory=tuple)


@cache
def installed() -> tuple[Feature, ...]:
    """The features of the installed package, ordered so that each comes after those it
    names in ``after`` (else by name): the order routers, setups and commands are added."""
    found = {point.name: point.load() for point in entry_points(group=GROUP)}
    if not found:
        raise RuntimeError(
            f"no feature is declared in the {GROUP!r} entry points: is judge-service installed "
            "(pip install -e .)?"
        )
    ordered: list[Feature] = []

    def visit(name: str, path: tuple[str, ...] = ()) -> None:
        if name in path:
            raise RuntimeError(f"features depend on each other in a circle: {(*path, name)}")
        feature = found[name]
        if feature in ordered:
            return
        for before in feature.after:
            visit(before, (*path, name))
        ordered.append(feature)

    for name in sorted(found):
        visit(name)
    return tuple(ordered)


def job_kinds(features: Sequence[Feature] | None = None) -> dict[str, JobKind]:
    """Every feature's job kinds by name."""
    return {job.name: job for feature in features or installed() for job in feature.jobs}


def the_one(attribute: str, features: Sequence[Feature] | None = None) -> Callable[..., Any]:
    """The function the one feature that declares ``attribute`` names (``score_batch``,
    ``expire_batch``)."""
    declared = [getattr(f, attribute) for f in features or installed() if getattr(f, attribute)]
    if len(declared) != 1:
        raise RuntimeError(f"{len(declared)} features declare {attribute}; exactly one must")
    return load(declared[0])


def after_batch(settings: Any, features: Sequence[Feature] | None = None) -> Callable[[str], None]:
    """What runs once a batch is scored: every feature's ``after_batch`` hook, in order."""
    hooks = [load(f.after_batch)(settings) for f in features or installed() if f.after_batch]

    def run(batch_id: str) -> None:
        for hook in hooks:
            hook(batch_id)

    return run


def prepare_worker(settings: Any, features: Sequence[Feature] | None = None) -> None:
    """Run every feature's ``prepare_worker``."""
    for feature in features or installed():
        if feature.prepare_worker:
            load(feature.prepare_worker)(settings)


def job_runner(task: str, features: Sequence[Feature] | None = None) -> Callable[..., str]:
    """The function that runs the job kind whose task is ``task``; KeyError when none."""
    for kind in job_kinds(features).values():
        if kind.task == task:
            return load(kind.run)
    raise KeyError(f"no task named {task!r}")


def each(attribute: str, features: Sequence[Feature] | None = None) -> list[Callable[..., Any]]:
    """The functions the features name in ``attribute`` (``on_start``, ``on_stop``), in
    order."""
    return [load(getattr(f, attribute)) for f in features or installed() if getattr(f, attribute)]
