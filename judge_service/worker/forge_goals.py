"""One-line goal statements for trace tasks: the miner model's where one is configured, the
rule's otherwise.

A model's line is kept only when it is grounded: every id-like token it names (anything with
digits, an e-mail address) appears in the user's own turns, and so do at least half its
content words. Otherwise, and when the call
fails, the task keeps the rule's line (the opening request and the facts' entities).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from judge_service.forge.goals import Goal, entities_in
from judge_service.forge.text import content_tokens, tokens
from judge_service.forge.trace_tasks import TraceTask
from judge_service.llm import get_client
from judge_service.settings import Settings
from judge_service.worker.mining_task import model_options

log = logging.getLogger(__name__)

SCHEMA = {
    "type": "object",
    "properties": {"goal": {"type": "string"}},
    "required": ["goal"],
    "additionalProperties": False,
}
INSTRUCTIONS = (
    "Below are the turns a customer wrote in one support conversation, fenced as data. "
    "State the customer's goal in one line (at most 30 words), with the ids, dates and "
    "choices they gave. Name no id, number or address that the customer did not write. "
    'Answer as JSON: {"goal": "..."}.'
)
MAX_CONCURRENT = 8


def grounded(line: str, goal: Goal) -> bool:
    """Whether every id-like token of ``line`` appears in the goal's user turns, and at least
    half its content words do (a line about something else is no summary of them)."""
    said = goal.user_text.lower()
    if not line.strip() or not all(t.lower() in said for t in entities_in(line)):
        return False
    words = set(content_tokens(line))
    return bool(words) and len(words & set(tokens(said))) * 2 >= len(words)


async def _model_lines(
    job_id: str, tasks: list[TraceTask], spec: Any, settings: Settings
) -> list[str | None]:
    options = model_options(spec, settings, option="miner")
    client = get_client(settings)
    gate = asyncio.Semaphore(MAX_CONCURRENT)

    async def one(task: TraceTask) -> str | None:
        messages = [
            {"role": "system", "content": INSTRUCTIONS},
            {
                "role": "user",
                "content": f"<customer_turns>\n{task.first.user_text}\n</customer_turns>",
            },
        ]
        async with gate:
            try:
                reply, _ = await client.complete_json(
                    options["model"],
                    messages,
                    SCHEMA,
                    cache_key_parts={"forge_goal": job_id, "messages": messages},
                    api_base=options.get("api_base"),
                    api_key=options.get("api_key"),
                    timeout=float(options.get("timeout_s", 120.0)),
                    sampling={"temperature": 0.0, "max_tokens": 120},
                    response_format_kind=options.get("response_format_kind", "json_schema"),
                    free=bool(options.get("free", False)),
                    schema_name="goal_line",
                )
            except Exception as exc:  # a failed call keeps the rule's line
                log.warning("goal line of forge job %s: %s", job_id, exc)
                return None
        line = reply.get("goal") if isinstance(reply, dict) else None
        return " ".join(line.split())[:300] if isinstance(line, str) else None

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def goal_lines(
    job_id: str, tasks: list[TraceTask], miner: Any, settings: Settings
) -> tuple[list[str], dict[str, int]]:
    """Each task's goal line, and how many came from the model, the rule, or were the
    model's but ungrounded."""
    rule = [t.first.line() for t in tasks]
    if miner is None or not tasks:
        return rule, {"rule": len(tasks)}
    proposed = asyncio.run(_model_lines(job_id, tasks, miner, settings))
    lines, counts = [], {"model": 0, "rule": 0, "ungrounded": 0}
    for task, fallback, line in zip(tasks, rule, proposed, strict=True):
        if line is not None and grounded(line, task.first):
            lines.append(line)
            counts["model"] += 1
        else:
            lines.append(fallback)
            counts["rule"] += 1
            counts["ungrounded"] += line is not None
    return lines, counts
