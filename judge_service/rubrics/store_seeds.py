"""Loading rubric files into the database: ``rubrics import``, and the shipped seeds that
``db upgrade`` (and so an embedded ``serve``) adds to a database that lacks them.

The seeds are added only under names the database does not know yet: a rubric that exists,
edited through reviews or imported from the user's own file, is never touched by an upgrade.
Newer seed content reaches an existing rubric only through an explicit ``rubrics import``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from judge_service.core.storage import audit
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.keys import key_projects
from judge_service.rubrics import store as rubrics
from judge_service.rubrics.files import RubricFile, load


@dataclass(frozen=True)
class Imported:
    ref: str
    action: str  # created, updated, unchanged
    source: str


def import_files(
    *, session: Session, loaded: list[RubricFile], actor: str, project: str = rubrics.DEFAULT
) -> list[Imported]:
    """Each file as a version of ``project``'s rubric (see
    :func:`judge_service.rubrics.store.import_rubric`), with an audit record for every
    version written."""
    done = []
    for item in loaded:
        spec = item.rubric.model_dump(mode="json")
        row, action = rubrics.import_rubric(
            session=session,
            name=spec["name"],
            description=spec["description"],
            criteria=spec["criteria"],
            prompts=spec["prompts"],
            penalty=spec.get("penalty"),
            created_by=actor,
            source=f"file:{item.source}",
            project=project,
        )
        if action != "unchanged":
            audit.record(
                session=session,
                actor=actor,
                action=f"rubric.{action}",
                target=row.ref,
                detail={
                    "source": item.source,
                    "criteria": len(spec["criteria"]),
                    "project": project,
                },
            )
        done.append(Imported(row.ref, action, item.source))
    return done


def seed_project(*, session: Session, project: str, actor: str) -> list[Imported]:
    """Import into ``project`` the shipped seed rubrics whose names it does not have.

    Every project gets its own copy of the seeds (a rubric name resolves within the caller's
    project only), so one project's reviews never change another's rubric."""
    seeds = load()
    missing = [
        s for s in seeds if not rubrics.exists(session=session, name=s.rubric.name, project=project)
    ]
    return import_files(session=session, loaded=missing, actor=actor, project=project)


def seed_missing(database_url: str) -> list[Imported]:
    """Import the shipped seed rubrics (version 1) that ``default`` and the projects of the
    live keys do not have.

    Run after the schema is at head. Running it again changes nothing."""
    with session_scope(database_url) as session:
        projects = sorted({rubrics.DEFAULT, *key_projects(session=session)})
        done: list[Imported] = []
        for project in projects:
            done.extend(seed_project(session=session, project=project, actor="db-upgrade"))
        return done
