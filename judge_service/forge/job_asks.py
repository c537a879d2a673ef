"""Many JSON questions to the forge job's model (its ``miner``), at most a few at a time.

A failed call is an answer of ``None``, counted by the caller: one bad reply keeps the rule's
result for that item and never fails the job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from judge_service.core.settings import Settings
from judge_service.judging.client import get_client
from judge_service.judging.client_options import model_options

log = logging.getLogger(__name__)

MAX_CONCURRENT = 8


async def _ask_all(
    job_id: str,
    spec: Any,
    settings: Settings,
    prompts: Sequence[list[dict[str, str]]],
    schema: dict[str, Any],
    name: str,
    max_tokens: int,
) -> list[dict[str, Any] | None]:
    options = model_options(spec, settings, option="miner")
    client = get_client(settings)
    gate = asyncio.Semaphore(MAX_CONCURRENT)

    async def one(messages: list[dict[str, str]]) -> dict[str, Any] | None:
        async with gate:
            try:
                reply, _ = await client.complete_json(
                    options["model"],
                    messages,
                    schema,
                    cache_key_parts={f"forge_{name}": job_id, "messages": messages},
                    api_base=options.get("api_base"),
                    api_key=options.get("api_key"),
                    timeout=float(options.get("timeout_s", 120.0)),
                    sampling={"temperature": 0.0, "max_tokens": max_tokens},
                    response_format_kind=options.get("response_format_kind", "json_schema"),
                    free=bool(options.get("free", False)),
                    schema_name=name,
                )
            except Exception as exc:  # one failed call keeps the rule's answer for its item
                log.warning("forge job %s, %s: %s", job_id, name, exc)
                return None
        return reply if isinstance(reply, dict) else None

    return list(await asyncio.gather(*(one(m) for m in prompts)))


def ask_all(
    job_id: str,
    spec: Any,
    settings: Settings,
    prompts: Sequence[list[dict[str, str]]],
    *,
    schema: dict[str, Any],
    name: str,
    max_tokens: int = 200,
) -> list[dict[str, Any] | None]:
    """Each prompt's JSON answer from the model ``spec`` (``None`` where the call failed)."""
    if not prompts:
        return []
    return asyncio.run(_ask_all(job_id, spec, settings, prompts, schema, name, max_tokens))
