"""What the app keeps on ``app.state`` for its routes, typed (set up by ``core.api.app``).

Routes read the service's parts from the request's app; a Protocol names them, so a route
that reads ``state.dispatcher`` is checked like any other attribute access."""

from __future__ import annotations

from typing import Protocol

from judge_service.core.api.key_cache import CheckedKeys
from judge_service.core.api.shutdown import Shutdown
from judge_service.core.features import Feature
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.worker.dispatch import Dispatcher


class ServiceState(Protocol):
    """The app's ``state``, as every route may read it."""

    settings: Settings
    registry: Registry
    dispatcher: Dispatcher
    shutdown: Shutdown
    features: tuple[Feature, ...]
    checked_keys: CheckedKeys
