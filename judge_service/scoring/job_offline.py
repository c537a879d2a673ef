"""``judge-service score``: a JSONL file through the same pipeline, without the API.

The plan is resolved and built as the API and the worker do it (:func:`audit_plan`,
:func:`build_scoring`): the default panel, every default detector, the known-hack
corpus of the service's database when there is one, and ``JS_PENALTY_POLICY``.
Results are written in input order, one line per input line. A line that is not
a valid sample gets a masked ``bad_sample`` result naming the problem.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from judge_service import wire
from judge_service.audit.detectors import audit_plan
from judge_service.audit.host import FLAG_THRESHOLD
from judge_service.core.batch_plan import BatchPlan
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.storage.db import schema_is_current
from judge_service.domain import Outcome, Sample
from judge_service.judging.local_build import machine_build
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.judging.panels import default_panel, normalise_spec
from judge_service.scoring.evaluate import Scoring, batch_stats, evaluate_batch
from judge_service.scoring.job import build_scoring, known_hack_texts

log = logging.getLogger(__name__)


def _read(path: Path) -> list[Sample | Outcome]:
    items: list[Sample | Outcome] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = wire.SampleIn.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            reason = f"line {number}: {where}: {first['msg']}"
            items.append(Outcome.masked(f"line-{number}", "bad_sample", reason))
            continue
        items.append(Sample.model_validate(sample.model_dump(mode="json")))
    return items


def _summary(outcomes: list[Outcome], seconds: float, audit: str) -> Table:
    valid = [o.reward for o in outcomes if o.valid and o.reward is not None]
    kinds = Counter(o.failure_kind for o in outcomes if not o.valid)
    flagged = sum(o.hack_score >= FLAG_THRESHOLD for o in outcomes)
    table = Table(
        "samples", "valid", "masked", "flagged", "mean reward", "failures", "seconds",
        caption=audit,
    )  # fmt: skip
    table.add_row(
        str(len(outcomes)),
        str(len(valid)),
        str(len(outcomes) - len(valid)),
        str(flagged),
        f"{sum(valid) / len(valid):.3f}" if valid else "-",
        ", ".join(f"{k}: {n}" for k, n in kinds.items()) or "-",
        f"{seconds:.1f}",
    )
    return table


def _known_hacks(settings: Settings, project: str | None) -> list[str]:
    """The service database's confirmed hacks (of ``project``; None: of all), as the worker
    reads them; none when that database is not set up (``score`` never creates one)."""
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and not (url.database and Path(url.database).is_file()):
        return []
    try:
        if not schema_is_current(settings.database_url):
            return []
        return known_hack_texts(settings, project)
    except SQLAlchemyError as exc:
        log.warning("no known-hack corpus: the database cannot be read (%s)", exc)
        return []


def batch_plan_for(
    *,
    settings: Settings,
    registry: Registry,
    judges: list[str] | None,
    aggregator: str | None,
    audit: bool,
) -> BatchPlan:
    """The plan the API would store for this file sent as one batch."""
    specs = [
        normalise_spec(json.loads(j) if isinstance(j, str) and j.startswith("{") else j)
        for j in (judges or default_panel(settings))
    ]
    audit_fields: Mapping[str, object] = (
        audit_plan(settings=settings, registry=registry) if audit else {}
    )
    return BatchPlan(
        judges=specs, aggregator=aggregator or settings.default_aggregator, **audit_fields
    )


def _scoring(
    samples: list[Sample],
    *,
    settings: Settings,
    judges: list[str] | None,
    aggregator: str | None,
    audit: bool,
    deadline: float,
    project: str | None,
) -> Scoring:
    """The file's plan, built as the worker builds a stored batch's."""
    registry = Registry()
    plan = batch_plan_for(
        settings=settings, registry=registry, judges=judges, aggregator=aggregator, audit=audit
    )
    if not settings.local_model_url and LOCAL_JUDGE_NAME in {j.name for j in plan.judges}:
        build = machine_build()
        if not build.ready():  # once per machine; this command waits for it
            say = Console(stderr=True).print
            say("the local judge's llama-server is built once for this machine (~17 min)")
            build.build_with_progress(report=say)
    return build_scoring(
        plan,
        registry=registry,
        settings=settings,
        deadline=deadline,
        # the worker reads the corpus on the same condition
        known_hacks=_known_hacks(settings, project) if plan.detectors else [],
        run_stats=lambda: {"run_id": None, "step": None, **batch_stats(samples)},
    )


def _describe_audit(scoring: Scoring, penalty: str) -> str:
    if not scoring.detectors:
        return "audit off"
    return (
        f"audit: {len(scoring.detectors)} detectors, penalty {penalty}; "
        f"flagged = hack_score >= {FLAG_THRESHOLD}"
    )


def score_file(
    infile: Path,
    out: Path,
    *,
    settings: Settings,
    judges: list[str] | None,
    aggregator: str | None,
    timeout_s: float,
    audit: bool = True,
    console: Console | None = None,
    project: str | None = None,
) -> list[Outcome]:
    """Score every line of ``infile`` and write ``out``; returns the outcomes in order.

    With ``audit`` (the default) the samples go through the default detectors and
    penalty policy, as a batch sent to the API without ``detectors`` or ``penalty``.
    ``project``: only its confirmed hacks feed the known-hack detector (None: every
    project's), as a batch of that project gets from the worker.
    """
    console = console or Console()
    items = _read(infile)
    samples = [s for s in items if isinstance(s, Sample)]
    started = time.monotonic()
    scoring = _scoring(
        samples,
        settings=settings,
        judges=judges,
        aggregator=aggregator,
        audit=audit,
        deadline=started + timeout_s,
        project=project,
    )
    outcomes: list[Outcome | None] = [i if isinstance(i, Outcome) else None for i in items]
    todo = [(i, s) for i, s in enumerate(items) if isinstance(s, Sample)]
    columns = (TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("scoring", total=len(items))
        progress.advance(task, len(items) - len(todo))

        async def collect(index: int, outcome: Outcome) -> None:
            outcomes[index] = outcome
            progress.advance(task)

        asyncio.run(evaluate_batch(todo, scoring, collect))
    finished = [o for o in outcomes if o is not None]
    with out.open("w", encoding="utf-8") as handle:
        for outcome in finished:
            result = wire.SampleResult.model_validate(outcome.model_dump())
            handle.write(result.model_dump_json() + "\n")
    described = _describe_audit(scoring, settings.penalty_policy)
    console.print(_summary(finished, time.monotonic() - started, described))
    return finished
