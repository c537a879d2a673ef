"""Plugin discovery through entry points: lazy, validated against ``contracts``.

Built-ins register through the same groups as third-party packages, so the
service never imports ``plugins`` directly. A plugin that fails to load is
recorded with its error and skipped; the service still starts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from judge_service.contracts import Aggregator, Detector, Judge
from judge_service.core.plugin_checks import Kind, check_plugin

log = logging.getLogger(__name__)

GROUPS: dict[Kind, str] = {
    "judges": "judge_service.judges",
    "detectors": "judge_service.detectors",
    "aggregators": "judge_service.aggregators",
}
_PROTOCOLS: dict[Kind, type] = {"judges": Judge, "detectors": Detector, "aggregators": Aggregator}


class PluginError(Exception):
    """A plugin could not be found, loaded, or built with the given options."""


@dataclass(frozen=True)
class PluginInfo:
    kind: Kind
    name: str
    target: str
    distribution: str
    version: str
    error: str | None = None
    #: The optional abilities the class declares (``contracts.ABILITIES`` names).
    abilities: tuple[str, ...] = ()


def _distribution(entry: EntryPoint) -> tuple[str, str]:
    dist = entry.dist
    if dist is None:
        return ("?", "?")
    return (dist.metadata["Name"] or "?", dist.version or "?")


class Registry:
    """Lists and loads plugins on demand; remembers load failures by name."""

    def __init__(self) -> None:
        self._entries: dict[Kind, dict[str, EntryPoint]] = {}
        self._classes: dict[tuple[Kind, str], type] = {}
        self._abilities: dict[tuple[Kind, str], tuple[str, ...]] = {}
        self._errors: dict[tuple[Kind, str], str] = {}

    def _group(self, kind: Kind) -> dict[str, EntryPoint]:
        if kind not in self._entries:
            self._entries[kind] = {ep.name: ep for ep in entry_points(group=GROUPS[kind])}
        return self._entries[kind]

    def names(self, kind: Kind) -> list[str]:
        """Names of the installed plugins of a kind (loading none of them)."""
        return sorted(self._group(kind))

    def load(self, kind: Kind, name: str) -> type:
        """The plugin class, checked against its contract and its declared abilities
        (:func:`check_plugin`). Raises PluginError naming the plugin and what it lacks."""
        key = (kind, name)
        if key in self._classes:
            return self._classes[key]
        if key in self._errors:
            raise PluginError(self._errors[key])
        entry = self._group(kind).get(name)
        if entry is None:
            raise PluginError(f"no {kind[:-1]} plugin named {name!r}")
        try:
            cls = entry.load()
            abilities = check_plugin(kind, cls)
        except Exception as exc:  # any import or contract failure disables just this plugin
            message = f"{kind[:-1]} plugin {name!r} failed to load: {type(exc).__name__}: {exc}"
            log.warning(message)
            self._errors[key] = message
            raise PluginError(message) from exc
        self._classes[key] = cls
        self._abilities[key] = tuple(abilities)
        return cls

    def abilities(self, kind: Kind, name: str) -> tuple[str, ...]:
        """The optional abilities a plugin declares (loading it). Raises PluginError."""
        self.load(kind, name)
        return self._abilities[(kind, name)]

    def create(self, kind: Kind, name: str, /, **options: Any) -> Any:
        """An instance built with ``options``; bad options raise PluginError."""
        cls = self.load(kind, name)
        try:
            instance = cls(**options)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"{kind[:-1]} {name!r}: bad options: {exc}") from exc
        if not isinstance(instance, _PROTOCOLS[kind]):
            raise PluginError(f"{kind[:-1]} {name!r} does not satisfy its protocol")
        return instance

    def describe(self) -> list[PluginInfo]:
        """Every installed plugin with its distribution, loading each to report failures."""
        infos = []
        for kind in GROUPS:
            for name, entry in sorted(self._group(kind).items()):
                dist, version = _distribution(entry)
                error: str | None = None
                abilities: tuple[str, ...] = ()
                try:
                    abilities = self.abilities(kind, name)
                except PluginError as exc:
                    error = str(exc)
                infos.append(PluginInfo(kind, name, entry.value, dist, version, error, abilities))
        return infos
