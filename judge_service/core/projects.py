"""Projects: the tenancy boundary. Every key belongs to one project, or (admins) to all.

A key sees and changes only what was made in its project: batches and their results, runs,
rubrics, review items and forge jobs. Something of another project is answered 404, as if it
did not exist. An admin key of project ``*`` sees every project, and names the one it acts in
with ``?project=`` (``default`` when it names none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judge_service.core.errors import Forbidden, ValidationFailed

DEFAULT = "default"
#: The project of admin keys made for every project.
ALL = "*"
#: A short slug: lowercase letters, digits, ``-`` and ``_``, starting with a letter or digit.
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_LENGTH = 63


def check_name(value: str, *, field: str = "project", allow_all: bool = False) -> str:
    """``value`` when it is a project name (or ``*`` with ``allow_all``); 422 naming ``field``."""
    if allow_all and value == ALL:
        return value
    if not NAME.fullmatch(value):
        raise ValidationFailed(
            f"{field}: {value[:80]!r} is not a project name: use 1-{MAX_LENGTH} lowercase "
            "letters, digits, '-' or '_', starting with a letter or digit"
            + (", or '*' for every project" if allow_all else ""),
            detail={"field": field},
        )
    return value


@dataclass(frozen=True)
class Scope:
    """What a caller sees (``see``; None for every project) and where what it makes goes."""

    see: str | None
    home: str

    def owns(self, project: str | None) -> bool:
        """True when a row of ``project`` is visible to the caller."""
        return self.see is None or project == self.see


def scope_of(key_project: str, asked: str | None = None) -> Scope:
    """The scope of a key of ``key_project``, narrowed to ``asked`` (``?project=``).

    A key of one project that asks for another is refused (403, naming neither's content);
    an all-projects key that asks for one sees and acts in that one only."""
    if asked is not None:
        check_name(asked)
    if key_project == ALL:
        return Scope(asked, asked) if asked is not None else Scope(None, DEFAULT)
    if asked is not None and asked != key_project:
        raise Forbidden(
            f"this key belongs to project {key_project!r}; it cannot act in project {asked!r}",
            detail={"field": "project", "project": key_project},
        )
    return Scope(key_project, key_project)
