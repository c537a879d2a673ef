"""Rubric YAML files: parsing and validating them, and finding the seeds shipped with the service.

A file has the shape of ``POST /v1/rubrics`` (:class:`judge_service.rubrics.wire.RubricCreate`),
so one validation covers both ways in. The seeds are found through ``importlib.resources`` in the
installed ``judge_service_rubrics`` package, never relative to the working directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml
from pydantic import ValidationError

from judge_service.rubrics.wire import RubricCreate

SEED_PACKAGE = "judge_service_rubrics"
SUFFIXES = (".yaml", ".yml")


class RubricFileError(ValueError):
    """A rubric file that cannot be read, parsed or validated; the message names the file."""


@dataclass(frozen=True)
class RubricFile:
    source: str
    rubric: RubricCreate


def seed_dir() -> Traversable:
    """The folder of seed rubrics inside the installed package."""
    return files(SEED_PACKAGE)


def parse(text: str, source: str) -> RubricFile:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RubricFileError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RubricFileError(f"{source}: expected a mapping with name, description, criteria")
    try:
        return RubricFile(source, RubricCreate.model_validate(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors()
        )
        raise RubricFileError(f"{source}: {problems}") from exc


def load(path: Path | Traversable | None = None) -> list[RubricFile]:
    """Every rubric file under ``path`` (a file or a folder; default: the seeds), name order.

    All files are validated before any is returned, so a bad file stops the whole import.
    """
    root = seed_dir() if path is None else path
    if root.is_file():
        entries = [root]
    elif root.is_dir():
        entries = sorted(
            (e for e in root.iterdir() if e.is_file() and e.name.endswith(SUFFIXES)),
            key=lambda e: e.name,
        )
    else:
        raise RubricFileError(f"{root}: no such file or folder")
    loaded = []
    for entry in entries:
        try:
            text = entry.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RubricFileError(f"{entry.name}: cannot read: {exc}") from exc
        loaded.append(parse(text, entry.name))
    names = [f.rubric.name for f in loaded]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise RubricFileError(f"the same rubric name in several files: {', '.join(repeated)}")
    return loaded
