"""The contract check a plugin class passes when the registry loads it.

A class must implement its kind's required methods (a judge's ``score`` async), and
every optional ability it declares (``contracts.ABILITIES``) must fit its kind and be
implemented: each abstract method of the ability defined, callable, and async where the
ability's is. A failure raises ``TypeError`` saying what is missing; the registry adds the
plugin's name.
"""

from __future__ import annotations

import inspect
from typing import Literal

from judge_service.contracts import ABILITIES, abilities_of

Kind = Literal["judges", "detectors", "aggregators"]

#: The methods every plugin of a kind defines, and whether each must be async.
REQUIRED: dict[Kind, dict[str, bool]] = {
    "judges": {"score": True},
    "detectors": {"detect": False},
    "aggregators": {"aggregate": False},
}

_MISSING = object()


def _member(owner: type, name: str) -> object:
    """``owner.name`` as defined, read without running descriptors; a classmethod or
    staticmethod gives its function. ``_MISSING`` when undefined."""
    value = inspect.getattr_static(owner, name, _MISSING)
    if isinstance(value, classmethod | staticmethod):
        return value.__func__
    return value


def _problem(cls: type, method: str, must_be_async: bool) -> str | None:
    """What is wrong with ``cls``'s ``method``, or None when it is fine."""
    value = _member(cls, method)
    if value is _MISSING or method in _still_abstract(cls):
        return f"has no {method}() method"
    if not callable(value):
        return f"its {method} is a {type(value).__name__}, not a method"
    if must_be_async and not inspect.iscoroutinefunction(value):
        return f"its {method}() must be async"
    return None


def _still_abstract(cls: type) -> frozenset[str]:
    """The abstract methods ``cls`` still lacks (none for a class that is not an ABC)."""
    abstract = inspect.getattr_static(cls, "__abstractmethods__", frozenset())
    return frozenset(abstract) if isinstance(abstract, frozenset | set) else frozenset()


def check_plugin(kind: Kind, cls: object) -> list[str]:
    """The abilities a plugin class declares, once it passed the check; ``TypeError``
    naming the ability and the missing method otherwise."""
    if not inspect.isclass(cls):
        raise TypeError(f"is a {type(cls).__name__}, not a class")
    problems = {m: _problem(cls, m, is_async) for m, is_async in REQUIRED[kind].items()}
    missing = {m: why for m, why in problems.items() if why is not None}
    if missing:
        raise TypeError(f"breaks the {kind[:-1]} contract: {'; '.join(missing.values())}")
    declared = abilities_of(cls)
    for name in declared:
        ability, kinds = ABILITIES[name]
        if kind not in kinds:
            raise TypeError(
                f"declares the ability {name} ({ability.__name__}), which only "
                f"{' and '.join(kinds)} can have"
            )
        for method in sorted(_still_abstract(ability)):
            must_be_async = inspect.iscoroutinefunction(_member(ability, method))
            problem = _problem(cls, method, must_be_async)
            if problem is not None:
                raise TypeError(
                    f"declares the ability {name} ({ability.__name__}) but {problem}: "
                    f"implement {'async ' if must_be_async else ''}{method}() or drop "
                    f"{ability.__name__} from its bases"
                )
    return declared
