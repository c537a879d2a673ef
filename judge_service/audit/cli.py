"""``judge-service detectors train`` and ``judge-service audit``: the detectors without the judges.

The service never imports the plugins package: the learned detector and every
other detector are reached through the registry (entry points), like third-party ones.
``audit`` writes one line per input line, ``{"id", "hack_score", "findings"}``, in
input order; a line that is not valid JSON or not a sample still gets a numeric score
(0.0) and an info finding that says what was wrong with it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Protocol, runtime_checkable

import typer

from judge_service.core.cli_common import CommandLine

detectors_app = typer.Typer(
    no_args_is_help=True, help="Reward-hack detectors: train the learned one."
)

FLAG_AT = 0.5
_PROMPT_KEYS = ("prompt", "question", "instruction", "input", "query")
_COMPLETION_KEYS = ("completion", "response", "output", "answer")


class _Saved(Protocol):
    def save(self, path: Path) -> Path: ...


class _Head(_Saved, Protocol):
    metrics: dict[str, Any]


class _Weights(_Saved, Protocol):
    kinds: dict[str, float]


@runtime_checkable
class _Trainable(Protocol):
    """What ``detectors train`` calls on the learned detector's class (its classmethods)."""

    def train(self, rows: list[dict[str, Any]], *, folds: int) -> _Head: ...
    def train_agent(self, rows: list[dict[str, Any]], *, folds: int) -> _Head: ...
    def train_weights(self, rows: list[dict[str, Any]]) -> _Weights: ...


def _text_or_messages(value: Any) -> str | list[dict[str, Any]]:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):
        return value
    return json.dumps(value, ensure_ascii=False)


def parse_line(line: str, number: int) -> tuple[Any, str, str | None]:
    """``(sample or None, id, problem)`` for one input line, as leniently as can be."""
    from judge_service.domain import Sample

    try:
        data = json.loads(line)
    except ValueError as exc:
        return None, f"line-{number}", f"line {number}: invalid JSON: {exc}"
    if not isinstance(data, dict):
        return None, f"line-{number}", f"line {number}: not a JSON object"
    sample_id = str(data.get("id") or f"line-{number}")
    prompt = next((data[k] for k in _PROMPT_KEYS if data.get(k) is not None), "")
    completion = next((data[k] for k in _COMPLETION_KEYS if data.get(k) is not None), "")
    fields: dict[str, Any] = {
        "id": sample_id,
        "group_id": str(data["group_id"]) if data.get("group_id") is not None else None,
        "prompt": _text_or_messages(prompt),
        "completion": _text_or_messages(completion),
        "metadata": data.get("metadata") if isinstance(data.get("metadata"), dict) else {},
    }
    try:
        return Sample(**fields), sample_id, None
    except ValueError:
        fields.update(
            prompt=json.dumps(prompt, ensure_ascii=False, default=str),
            completion=json.dumps(completion, ensure_ascii=False, default=str),
        )
        return Sample(**fields), sample_id, None


def build_detectors(*, no_llm: bool) -> tuple[list[Any], list[str]]:
    """Every installed detector that loads (``UsesLLM`` ones left out with ``no_llm``); a
    ``FromSettings`` one is built from the settings."""
    from judge_service.contracts import FromSettings, UsesLLM
    from judge_service.core.registry import PluginError, Registry

    registry = Registry()
    detectors: list[Any] = []
    skipped: list[str] = []
    for name in registry.names("detectors"):
        try:
            cls = registry.load("detectors", name)
            if no_llm and issubclass(cls, UsesLLM):
                skipped.append(f"{name}: calls a model (--no-llm)")
                continue
            if issubclass(cls, FromSettings):
                from judge_service.core.settings import get_settings

                detectors.append(cls.from_settings(get_settings()))
            else:
                detectors.append(registry.create("detectors", name))
        except (PluginError, TypeError, ValueError) as exc:
            skipped.append(f"{name}: {exc}")
    return detectors, skipped


def audit_lines(lines: Iterable[str], detectors: list[Any]) -> Iterator[dict[str, Any]]:
    """One result per non-blank line: ``{"id", "hack_score", "findings"}``."""
    from judge_service.audit.host import audit_now
    from judge_service.contracts import Evidence
    from judge_service.domain import Outcome

    evidence = Evidence()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        sample_id = f"line-{number}"
        try:
            sample, sample_id, problem = parse_line(line, number)
            if sample is None:
                yield _unscored(sample_id, "bad_input", problem or f"line {number}: unreadable")
                continue
            unscored = Outcome(id=sample_id, reward=None, valid=False)
            outcome = audit_now(sample, unscored, detectors, evidence)
        except Exception as exc:  # the line boundary: one odd line never stops the audit
            yield _unscored(sample_id, "audit_error", f"line {number}: {type(exc).__name__}: {exc}")
            continue
        yield {
            "id": sample_id,
            "hack_score": outcome.hack_score,
            "findings": [f.model_dump() for f in outcome.findings],
        }


def _unscored(sample_id: str, kind: str, why: str) -> dict[str, Any]:
    """The result line of an input line that could not be audited: score 0, and why."""
    from judge_service.domain import Finding

    finding = Finding(
        detector="audit", kind=kind, severity="info", confidence=1.0, evidence=why[:300]
    )
    return {"id": sample_id, "hack_score": 0.0, "findings": [finding.model_dump()]}


def audit_command(
    infile: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSONL, a sample a line")
    ],
    out: Annotated[Path, typer.Option("--out", help="JSONL, {id, hack_score, findings} a line")],
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Skip detectors that call a model")
    ] = False,
) -> None:
    """Run only the reward-hack detectors on a JSONL file; a progress bar, then a count by kind."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    detectors, skipped = build_detectors(no_llm=no_llm)
    console = Console(stderr=True)
    for note in skipped:
        console.print(f"[yellow]skipped detector {note}[/yellow]")
    lines = infile.read_text(encoding="utf-8", errors="replace").splitlines()
    kinds: Counter[str] = Counter()
    flagged = total = 0
    columns = (TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress, out.open("w", encoding="utf-8") as handle:
        task = progress.add_task("audit", total=sum(1 for line in lines if line.strip()))
        for result in audit_lines(lines, detectors):
            handle.write(json.dumps(result, ensure_ascii=False) + "\n")
            total += 1
            flagged += result["hack_score"] >= FLAG_AT
            kinds.update(f["kind"] for f in result["findings"])
            if total % 64 == 0:
                progress.update(task, completed=total)
        progress.update(task, completed=total)
    table = Table(
        "kind", "findings", title=f"{total} samples, {flagged} flagged (hack_score ≥ {FLAG_AT})"
    )
    for kind, count in kinds.most_common():
        table.add_row(kind, str(count))
    Console().print(table)


def review_rows(settings: Any) -> list[dict[str, Any]]:
    """Reviewed suspected hacks as training rows: confirmed ones label 1, rejected ones 0."""
    from judge_service.audit.store_known_hacks import list_known_hacks
    from judge_service.core.storage.db import session_scope
    from judge_service.domain import Sample

    rows = []
    with session_scope(settings.database_url) as session:
        for confirmed in (True, False):
            for hack in list_known_hacks(session=session, limit=1_000_000, confirmed=confirmed):
                try:
                    sample = Sample.model_validate(hack.sample)
                except ValueError:
                    continue
                # A trajectory stays a list of messages: it trains the agent head.
                completion = (
                    sample.completion
                    if isinstance(sample.completion, list)
                    else sample.transcript()
                )
                rows.append(
                    {
                        "prompt": sample.prompt_text(),
                        "completion": completion,
                        "label": 1 if confirmed else 0,
                        "group_id": sample.group_id or f"review-{hack.id}",
                    }
                )
    return rows


@detectors_app.command("train")
def train(
    data: Annotated[
        list[Path],
        typer.Option(
            "--data",
            exists=True,
            dir_okay=False,
            help="JSONL rows with prompt, completion, label, group_id (repeatable); text "
            "completions train the text head, lists of messages the agent head",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write the text head (JSON)")] = Path(
        "learned_detector.json"
    ),
    agent_out: Annotated[
        Path | None,
        typer.Option(
            "--agent-out",
            help="Where to write the agent head (JSON); default learned_agent.json next to --out",
        ),
    ] = None,
    weights_out: Annotated[
        Path | None,
        typer.Option(
            "--weights-out",
            help="Where to write the rules' finding weights (JSON): each kind's precision on the "
            "labelled rows; default finding_weights.json next to --out",
        ),
    ] = None,
    folds: Annotated[int, typer.Option(help="GroupKFold folds for the reported AUROC")] = 5,
    with_review: Annotated[
        bool,
        typer.Option(
            "--with-review",
            help="Also learn from the review queue's decisions in JS_DATABASE_URL: confirmed "
            "hacks as positives, rejected ones as negatives",
        ),
    ] = False,
) -> None:
    """Train the learned detector's heads; prints GroupKFold AUROC (by group_id), saves them."""
    from judge_service.core.registry import PluginError, Registry

    try:
        learned = Registry().load("detectors", "learned")
    except PluginError as exc:
        raise typer.BadParameter(f"the learned detector is not installed: {exc}") from exc
    if not isinstance(learned, _Trainable):
        raise typer.BadParameter("the learned detector installed cannot train its heads")
    rows, bad = [], 0
    for path in data:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                bad += 1
    if with_review:
        from judge_service.core.cli_common import ready_settings

        reviewed = review_rows(ready_settings())
        typer.echo(f"{len(reviewed)} reviewed rollouts from the review queue")
        rows.extend(reviewed)
    agents = [r for r in rows if isinstance(r, dict) and isinstance(r.get("completion"), list)]
    texts = [r for r in rows if isinstance(r, dict) and not isinstance(r.get("completion"), list)]
    heads = [("text head", texts, learned.train, out)]
    if agents:
        target = agent_out or out.with_name("learned_agent.json")
        heads.append(("agent head", agents, learned.train_agent, target))
    if bad:
        typer.echo(f"{bad} unreadable lines skipped")
    try:
        weights = learned.train_weights([r for r in rows if isinstance(r, dict)])
    except ValueError as exc:
        raise typer.BadParameter(f"finding weights: {exc}", param_hint="--data") from exc
    target = weights.save(weights_out or out.with_name("finding_weights.json"))
    typer.echo(f"finding weights: {len(weights.kinds)} kinds, written to {target}")
    for head, subset, train_head, target in heads:
        if not subset and head == "text head" and agents:
            typer.echo("no text rows: the text head is not retrained")
            continue
        try:
            model = train_head(subset, folds=folds)
        except ValueError as exc:
            raise typer.BadParameter(f"{head}: {exc}", param_hint="--data") from exc
        metrics = model.metrics
        typer.echo(
            f"{head}: rows {metrics['rows']} ({metrics['hacks']} hacks) in "
            f"{metrics['groups']} groups"
        )
        typer.echo(
            f"{head}: GroupKFold AUROC by group_id ({metrics['folds']} folds): "
            f"{metrics['cv_auroc']:.4f}  (Brier {metrics['cv_brier']:.4f})"
        )
        typer.echo(f"{head} written to {model.save(target)}")


def add_commands(cli: CommandLine) -> None:
    """This feature's commands on ``judge-service`` (``core.features``)."""
    cli.add_typer(detectors_app, name="detectors")
    cli.command("audit")(audit_command)
