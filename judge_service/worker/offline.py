"""``judge-service score``: a JSONL file through the same pipeline, without the API.

Results are written in input order, one line per input line. A line that is not
a valid sample gets a masked ``bad_sample`` result naming the problem.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from judge_service import wire
from judge_service.domain import Outcome, Sample
from judge_service.local_model import LOCAL_JUDGE_NAME, local_judge
from judge_service.panels import build_panel, normalise_spec
from judge_service.pipeline.evaluate import Plan, evaluate_batch
from judge_service.registry import Registry
from judge_service.settings import Settings
from judge_service.worker.tasks import llm_options


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


def _summary(outcomes: list[Outcome], seconds: float) -> Table:
    valid = [o.reward for o in outcomes if o.valid and o.reward is not None]
    kinds = Counter(o.failure_kind for o in outcomes if not o.valid)
    table = Table("samples", "valid", "masked", "mean reward", "failures", "seconds")
    table.add_row(
        str(len(outcomes)),
        str(len(valid)),
        str(len(outcomes) - len(valid)),
        f"{sum(valid) / len(valid):.3f}" if valid else "-",
        ", ".join(f"{k}: {n}" for k, n in kinds.items()) or "-",
        f"{seconds:.1f}",
    )
    return table


def score_file(
    infile: Path,
    out: Path,
    *,
    settings: Settings,
    judges: list[str] | None,
    aggregator: str | None,
    timeout_s: float,
    console: Console | None = None,
) -> list[Outcome]:
    """Score every line of ``infile`` and write ``out``; returns the outcomes in order."""
    console = console or Console()
    items = _read(infile)
    specs = [
        normalise_spec(json.loads(j) if isinstance(j, str) and j.startswith("{") else j)
        for j in (judges or settings.default_judge_specs() or [LOCAL_JUDGE_NAME])
    ]
    panel = build_panel(
        specs,
        registry=Registry(),
        aggregator=aggregator or settings.default_aggregator,
        llm_options=llm_options(settings),
        local=lambda: local_judge(settings),
    )
    started = time.monotonic()
    plan = Plan(
        panel=panel,
        deadline=started + timeout_s,
        concurrency=settings.sample_concurrency,
        settings=settings,
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

        asyncio.run(evaluate_batch(todo, plan, collect))
    finished = [o for o in outcomes if o is not None]
    with out.open("w", encoding="utf-8") as handle:
        for outcome in finished:
            result = wire.SampleResult.model_validate(outcome.model_dump())
            handle.write(result.model_dump_json() + "\n")
    console.print(_summary(finished, time.monotonic() - started))
    return finished
