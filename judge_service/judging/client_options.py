"""A job's model option (``miner``, ``solver``, ...) as the options of one model call.

The forge and the rubric miner both take a model per option: a litellm model string, an
object ``{"name": ..., <options>}``, or the local judge. Here the spec becomes call options,
its endpoint resolved from this process's settings and the local server started when named.
"""

from __future__ import annotations

from typing import Any

from judge_service.core.errors import EndpointRefused
from judge_service.core.settings import Settings
from judge_service.judging.endpoints import (
    default_model,  # noqa: F401  (the forge's import)
    model_or_default,
    resolve_spec,
)
from judge_service.judging.local_model import LocalModelUnavailable, local_judge
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.wire import spec_object

CALL_OPTIONS = ("api_base", "api_key", "response_format_kind", "free", "timeout_s")


def model_spec(spec: Any, option: str = "model") -> dict[str, Any]:
    """``spec`` in its one form, ``{"name": ..., <options>}``: a plain model string (what a
    job stored before options were normalised may hold) is ``{"name": it}``. Anything else
    that names no model is a ValueError naming ``option``."""
    spec = spec_object(spec)
    name = spec.get("name") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name.strip():
        given = "an object without a name" if isinstance(spec, dict) else type(spec).__name__
        raise ValueError(
            f"option {option}: not a model ({given}): give a litellm model string such as "
            'openai/gpt-4.1-mini, or an object {"name": ..., <options>}'
        )
    return spec


def model_options(spec: Any, settings: Settings, *, option: str = "model") -> dict[str, Any]:
    """litellm call options for the model of ``option``, given as ``spec`` (a model string
    or an object; None: the defaults). A spec that names no model, or a local model that
    cannot run, is a ValueError naming ``option``."""
    spec = model_spec(model_or_default(spec, settings), option)
    if spec["name"] == LOCAL_JUDGE_NAME:
        try:
            local = local_judge(settings)
        except LocalModelUnavailable as exc:
            raise ValueError(f"option {option}: {LOCAL_JUDGE_NAME} cannot run: {exc}") from exc
        return {"model": local["model"], **{k: local[k] for k in CALL_OPTIONS if k in local}}
    try:  # base URL and key of a named endpoint, read from this process's settings now
        spec = resolve_spec(spec, settings=settings)
    except EndpointRefused as exc:
        raise ValueError(f"option {option}: {exc.message}") from exc
    return {"model": spec["name"], **{k: spec[k] for k in CALL_OPTIONS if k in spec}}
