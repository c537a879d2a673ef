"""Which model servers a judge spec may reach, and with what key.

The operator names the servers (``JS_ENDPOINTS``); a request names one (``"endpoint":
"vllm-a"``). The API checks a request's specs with :func:`check_specs` and stores them with
the endpoint's name only; a worker turns the name into a base URL and a key when it builds
its panel (:func:`resolve_specs`). So a key never reaches a plan, a row or a log, and a
client cannot make workers call an address of its choosing (an internal service, a cloud
metadata endpoint) unless free endpoints are allowed (``JS_ALLOW_FREE_ENDPOINTS``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from judge_service.core.errors import EndpointRefused
from judge_service.core.settings import EndpointConfig, Settings
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.wire import spec_object

#: Sent to a free ``api_base`` as its key, so that no key of this process's environment
#: (``OPENAI_API_KEY``) ever goes to an address a client chose.
FREE_ENDPOINT_KEY = "sk-free-endpoint"
#: Spec options that hold a secret: never stored.
SECRET_OPTIONS = frozenset({"api_key"})


def _same_url(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def endpoint_at(base: str, settings: Settings) -> str | None:
    """The name of the configured endpoint served at ``base``, if any."""
    return next((n for n, c in settings.endpoints.items() if _same_url(c.base_url, base)), None)


def _operator_bases(settings: Settings) -> list[tuple[str, str | None]]:
    """(base URL, key) of the servers the operator named outside ``JS_ENDPOINTS``: the local
    judge's server and the default judges' ``api_base``."""
    found: list[tuple[str, str | None]] = []
    if settings.local_model_url:
        found.append((settings.local_model_url, None))
    for spec in settings.default_judge_specs() or []:
        if isinstance(spec, dict) and isinstance(spec.get("api_base"), str):
            found.append((spec["api_base"], spec.get("api_key")))
    return found


def _operator_base(base: str, settings: Settings) -> tuple[bool, str | None]:
    """Whether the operator named ``base`` outside ``JS_ENDPOINTS``, and the key given there."""
    matches = [key for url, key in _operator_bases(settings) if _same_url(url, base)]
    return bool(matches), next((key for key in matches if key), None)


def model_allowed(model: str, config: EndpointConfig) -> bool:
    """True when ``model`` (whole, or without its ``provider/`` prefix) matches a pattern."""
    bare = model.partition("/")[2]
    return any(fnmatchcase(model, p) or (bare and fnmatchcase(bare, p)) for p in config.models)


def _refuse(field: str, message: str, settings: Settings, **detail: Any) -> EndpointRefused:
    names = sorted(settings.endpoints)
    return EndpointRefused(
        f"{field}: {message}", detail={"field": field, "endpoints": names, **detail}
    )


def _named(name: Any, spec: dict[str, Any], *, settings: Settings, field: str) -> EndpointConfig:
    """The endpoint ``name`` if this spec's model may use it; 422 otherwise."""
    config = settings.endpoints.get(name) if isinstance(name, str) else None
    if config is None:
        valid = ", ".join(sorted(settings.endpoints)) or "none configured (JS_ENDPOINTS)"
        raise _refuse(f"{field}.endpoint", f"unknown endpoint {name!r}; valid: {valid}", settings)
    model = str(spec.get("model") or spec.get("name", ""))
    if not model_allowed(model, config):
        raise _refuse(
            f"{field}.name",
            f"model {model!r} is not allowed on endpoint {name!r} (allowed: "
            f"{', '.join(config.models)})",
            settings,
        )
    return config


def check_spec(spec: dict[str, Any], *, settings: Settings, field: str) -> dict[str, Any]:
    """A request's judge spec as the plan stores it, or 422 naming the field.

    An ``api_base`` of a configured endpoint becomes that endpoint's name; another one is
    refused unless free endpoints are allowed or the operator named it (the local judge's
    server, a default judge's). A spec's own ``api_key`` is always refused: see
    docs/endpoints.md.
    """
    if "api_key" in spec:
        raise _refuse(
            f"{field}.api_key",
            "a request may not carry a key; name an endpoint the operator configured "
            '("endpoint": <name>, keys in JS_ENDPOINTS)',
            settings,
        )
    base, name = spec.get("api_base"), spec.get("endpoint")
    if base is not None and name is not None:
        raise _refuse(f"{field}.api_base", "give `endpoint` or `api_base`, not both", settings)
    if base is not None:
        if not isinstance(base, str):
            raise _refuse(f"{field}.api_base", "must be a URL string", settings)
        name = endpoint_at(base, settings)
        if name is None:
            if settings.free_endpoints or _operator_base(base, settings)[0]:
                return spec
            raise _refuse(
                f"{field}.api_base",
                "not a configured endpoint's base URL; name one with "
                f'"endpoint" (valid: {", ".join(sorted(settings.endpoints)) or "none"})',
                settings,
            )
        spec = {**{k: v for k, v in spec.items() if k != "api_base"}, "endpoint": name}
    if name is not None:
        _named(name, spec, settings=settings, field=field)
    return spec


def check_specs(specs: list[Any], *, settings: Settings, field: str) -> list[Any]:
    """:func:`check_spec` on each object spec of a request's list ``field``."""
    return [
        check_spec(s, settings=settings, field=f"{field}.{i}") if isinstance(s, dict) else s
        for i, s in enumerate(specs)
    ]


def strip_secrets(spec: Any) -> Any:
    """The spec without its secret options (an operator's default judge with a key)."""
    if not isinstance(spec, dict):
        return spec
    return {k: v for k, v in spec.items() if k not in SECRET_OPTIONS}


def resolve_spec(spec: Any, *, settings: Settings) -> Any:
    """The spec with the base URL and key it is called with, read from this process's
    settings now. Raises :class:`EndpointRefused` when they no longer allow it."""
    if not isinstance(spec, dict):
        return spec
    if "endpoint" in spec:
        config = _named(spec["endpoint"], spec, settings=settings, field="plan")
        resolved = {k: v for k, v in spec.items() if k != "endpoint"}
        resolved["api_base"] = config.base_url
        if config.api_key is not None:
            resolved["api_key"] = config.api_key.get_secret_value()
        return resolved
    base = spec.get("api_base")
    if not isinstance(base, str):
        return spec
    name = endpoint_at(base, settings)
    if name is not None:  # a plan stored before the endpoint was configured
        return resolve_spec({**strip_secrets(spec), "endpoint": name}, settings=settings)
    named, key = _operator_base(base, settings)
    if not (named or settings.free_endpoints):
        raise _refuse("plan.api_base", "not a configured endpoint's base URL", settings)
    if "api_key" in spec:
        return spec
    if key is not None:
        return {**spec, "api_key": key}
    return spec if named else {**spec, "api_key": FREE_ENDPOINT_KEY}


def resolve_specs(specs: list[Any] | None, *, settings: Settings) -> list[Any] | None:
    """:func:`resolve_spec` on each spec (None stays None)."""
    return None if specs is None else [resolve_spec(s, settings=settings) for s in specs]


def default_model(settings: Settings) -> dict[str, Any] | None:
    """The first model (a litellm string, with a ``/``) of ``JS_DEFAULT_JUDGES``, if any."""
    defaults = [spec_object(s) for s in settings.default_judge_specs() or []]
    models = [s for s in defaults if isinstance(s, dict) and "/" in str(s.get("name", ""))]
    return models[0] if models else None


def model_or_default(spec: Any, settings: Settings) -> Any:
    """The model a job's option ``spec`` names, or for None the one it runs on: the first
    model of ``JS_DEFAULT_JUDGES``, else the local judge."""
    if spec is not None:
        return spec
    return default_model(settings) or LOCAL_JUDGE_NAME
