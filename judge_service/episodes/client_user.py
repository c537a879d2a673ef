"""The model-played user's call: one JSON completion per user turn, at temperature 0 with the
episode's seed, so a given seed replays the same conversation where the model allows.

No storage: the step route calls it before the step's transaction and hands the reply to the
engine (:class:`~judge_service.episodes.user.GivenUser`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.core.errors import Unavailable
from judge_service.core.settings import Settings
from judge_service.episodes.client_models import ask_json
from judge_service.episodes.script import Script
from judge_service.episodes.user import USER_SCHEMA, reply_of, user_messages
from judge_service.judging.client import ModelCallError


class UserModelFailed(Unavailable):
    """The user's model gave no usable reply: the step was not played; send it again."""

    code = "user_model_failed"


async def model_user_reply(
    settings: Settings,
    script: Script,
    messages: Sequence[Mapping[str, Any]],
    seed: int,
    episode_id: str,
) -> tuple[str, bool]:
    """The user's next message and whether it ends the conversation."""
    try:
        payload = await ask_json(
            settings,
            script.user_model,
            "user_model",
            user_messages(script, messages),
            USER_SCHEMA,
            seed=seed,
            max_tokens=300,
            cache_key_parts={"episode_user": episode_id, "turn": len(messages), "seed": seed},
            schema_name="user_turn",
        )
    except (ModelCallError, ValueError) as exc:  # ValueError: the spec no longer runs
        raise UserModelFailed(f"the user's model failed: {exc}") from exc
    reply = reply_of(payload)
    if reply is None:
        raise UserModelFailed("the user's model answered no {message, ends} object")
    return reply
