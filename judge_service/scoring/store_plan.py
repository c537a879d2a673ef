"""The parts of a batch's plan that come from storage: its rubric version and calibration maps.

Resolved when the batch is accepted and frozen into its plan, so the batch scores with
``name@N`` even if version N+1 is approved while it waits in the queue.
"""

from __future__ import annotations

from judge_service.core.batch_plan import CalibrationMap
from judge_service.core.errors import UnknownRubric
from judge_service.core.settings import Settings
from judge_service.core.storage.db import session_scope
from judge_service.domain import Rubric
from judge_service.judging.agreement import calibration_map
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_labels as labels


def resolve_rubric(ref: str, *, settings: Settings, project: str) -> Rubric:
    """``name`` (the active version) or ``name@N`` of ``project`` as the rubric's content;
    422 when unknown there."""
    with session_scope(settings.database_url) as session:
        row = rubrics.resolve_ref(session=session, ref=ref, project=project)
        if row is None:
            parsed = rubrics.parse_ref(ref)
            known = parsed is not None and rubrics.exists(
                session=session, name=parsed[0], project=project
            )
            why = "has no such version" if known else "is unknown"
            names = [r.name for r in rubrics.list_rubrics(session=session, project=project)]
            raise UnknownRubric(f"rubric {ref!r} {why}", detail={"rubric": ref, "known": names})
        return rubrics.to_domain(row)


def calibration_maps(
    judges: list[str], *, settings: Settings, project: str
) -> dict[str, CalibrationMap]:
    """The isotonic map of each judge that has enough human labels of ``project``'s
    rollouts (others stay raw)."""
    with session_scope(settings.database_url) as session:
        pairs = labels.labeled_scores(session=session, judges=judges, project=project)
    grouped: dict[str, list[tuple[float, bool]]] = {}
    for pair in pairs:
        grouped.setdefault(pair.judge, []).append((pair.score, pair.good))
    maps: dict[str, CalibrationMap] = {}
    for judge, values in grouped.items():
        fitted = calibration_map([s for s, _ in values], [g for _, g in values])
        if fitted is not None:
            maps[judge] = CalibrationMap(x=fitted[0], y=fitted[1])
    return maps
