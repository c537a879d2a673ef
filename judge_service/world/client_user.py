"""The model-played user's call: one JSON completion per user turn, at temperature 0 with the
episode's seed, so a given seed replays the same conversation where the model allows.

No storage: the step route calls it before the step's transaction and hands the reply to the
engine (:class:`~judge_service.world.user_model.GivenUser`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.core.errors import Unavailable
from judge_service.core.settings import Settings
from judge_service.judging.client import ModelCallError, get_client
from judge_service.judging.client_options import model_options
from judge_service.world.script import Script
from judge_service.world.user_model import USER_SCHEMA, reply_of, user_messages


class UserModelFailed(Unavailable):
    """The user's model gave no usable reply: the step was not played; send it again."""

    code = "user_model_failed"


def check_model(spec: Any, settings: Settings, option: str) -> dict[str, Any]:
    """The call options of an episode's model spec (``option``: ``user_model`` or
    ``simulator``); a ValueError naming ``option`` if unusable."""
    return model_options(spec, settings, option=option)


async def model_user_reply(
    settings: Settings,
    script: Script,
    messages: Sequence[Mapping[str, Any]],
    seed: int,
    episode_id: str,
) -> tuple[str, bool]:
    """The user's next message and whether it ends the conversation."""
    options = check_model(script.user_model, settings, "user_model")
    try:
        payload, _ = await get_client(settings).complete_json(
            options["model"],
            user_messages(script, messages),
            USER_SCHEMA,
            cache_key_parts={"episode_user": episode_id, "turn": len(messages), "seed": seed},
            api_base=options.get("api_base"),
            api_key=options.get("api_key"),
            timeout=float(options.get("timeout_s", 60.0)),
            sampling={"temperature": 0.0, "seed": seed, "max_tokens": 300},
            response_format_kind=options.get("response_format_kind", "json_schema"),
            free=bool(options.get("free", False)),
            schema_name="user_turn",
        )
    except ModelCallError as exc:
        raise UserModelFailed(f"the user's model failed: {exc}") from exc
    reply = reply_of(payload)
    if reply is None:
        raise UserModelFailed("the user's model answered no {message, ends} object")
    return reply
