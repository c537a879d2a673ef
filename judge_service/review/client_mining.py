"""Mining through a model: the job's model (a run's, or a forge job's failed traces) proposes
rubric items for :func:`judge_service.review.mining.mine`. No storage: the mining job and the
forge's review job both call it and store what it returns."""

from __future__ import annotations

from typing import Any

from judge_service.core.settings import Settings
from judge_service.domain import CallUsage
from judge_service.judging.client import get_client
from judge_service.judging.client_options import model_options
from judge_service.review.mining import MiningResult, MiningRollout, mine

#: Tokens a proposed item may take: the bounded schema's longest item (a 200-character
#: question, a 300-character rationale, five 64-character ids, keys and quotes: about 920
#: characters) at one character a token, the worst a small model's digits and symbols get.
#: At 400 a rambling local model was cut off inside a string, and the job failed.
ITEM_TOKENS = 1000


async def mine_with_model(
    rubric: Any,
    rollouts: list[MiningRollout],
    known: list[str],
    job: dict[str, Any],
    settings: Settings,
    *,
    option: str = "model",
) -> tuple[MiningResult, CallUsage, str]:
    """Mine ``rollouts`` with the job's model (a run's, or a forge job's failed traces);
    ``option``: the option that named it, for errors."""
    options = model_options(job["model"], settings, option=option)
    bounded = options.get("response_format_kind") == "json_object"
    usage = CallUsage()

    async def propose(messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
        nonlocal usage
        reply, cost = await get_client(settings).complete_json(
            options["model"],
            messages,
            schema,
            cache_key_parts={"mining_job": job["id"]},
            api_base=options.get("api_base"),
            api_key=options.get("api_key"),
            timeout=float(options.get("timeout_s", 300.0)),
            sampling={"temperature": 0.0, "max_tokens": ITEM_TOKENS * job["max_items"] + 200},
            response_format_kind=options.get("response_format_kind", "json_schema"),
            free=bool(options.get("free", False)),
            schema_name="rubric_items",
        )
        usage += cost
        return reply

    result = await mine(
        rubric,
        rollouts,
        propose,
        max_items=job["max_items"],
        known_texts=known,
        bounded=bounded,
        max_chars=600 if bounded else 1500,
    )
    return result, usage, options["model"]
