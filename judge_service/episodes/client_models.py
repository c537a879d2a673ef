"""An episode's model call: one JSON completion for the model user or the simulator, at
temperature 0 with the episode's seed, so a given seed replays the same answers where the
model allows. No storage: the step route calls these before the step's transaction."""

from __future__ import annotations

from typing import Any

from judge_service.core.settings import Settings
from judge_service.judging.client import get_client
from judge_service.judging.client_options import model_options


def check_model(spec: Any, settings: Settings, option: str) -> dict[str, Any]:
    """The call options of an episode's model spec (``option``: ``user_model`` or
    ``simulator``); a ValueError naming ``option`` if unusable."""
    return model_options(spec, settings, option=option)


async def ask_json(
    settings: Settings,
    spec: Any,
    option: str,
    messages: list[dict[str, str]],
    schema: dict[str, Any],
    *,
    seed: int,
    max_tokens: int,
    cache_key_parts: dict[str, Any],
    schema_name: str,
) -> Any:
    """The model's JSON reply to ``messages``; raises the client's ``ModelCallError``."""
    options = check_model(spec, settings, option)
    payload, _ = await get_client(settings).complete_json(
        options["model"],
        messages,
        schema,
        cache_key_parts=cache_key_parts,
        api_base=options.get("api_base"),
        api_key=options.get("api_key"),
        timeout=float(options.get("timeout_s", 60.0)),
        sampling={"temperature": 0.0, "seed": seed, "max_tokens": max_tokens},
        response_format_kind=options.get("response_format_kind", "json_schema"),
        free=bool(options.get("free", False)),
        schema_name=schema_name,
    )
    return payload
