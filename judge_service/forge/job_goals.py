"""One-line goal statements for trace tasks: the miner model's where one is configured, the
rule's otherwise.

A model's line is kept only when it is grounded: every id-like token it names (anything with
digits, an e-mail address) appears in the user's own turns, and so do at least half its
content words. Otherwise, and when the call fails, the task keeps the rule's line (the
opening request and the facts' entities).
"""

from __future__ import annotations

from typing import Any

from judge_service.core.settings import Settings
from judge_service.forge.job_asks import ask_all
from judge_service.forge.text import content_tokens, tokens
from judge_service.forge.trace_tasks import TraceTask
from judge_service.traces.goals import Goal, entities_in

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


def grounded(line: str, goal: Goal) -> bool:
    """Whether every id-like token of ``line`` appears in the goal's user turns, and at least
    half its content words do (a line about something else is no summary of them)."""
    said = goal.user_text.lower()
    if not line.strip() or not all(t.lower() in said for t in entities_in(line)):
        return False
    words = set(content_tokens(line))
    return bool(words) and len(words & set(tokens(said))) * 2 >= len(words)


def _prompt(task: TraceTask) -> list[dict[str, str]]:
    turns = f"<customer_turns>\n{task.first.user_text}\n</customer_turns>"
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": turns}]


def _line(reply: dict[str, Any] | None) -> str | None:
    line = reply.get("goal") if reply else None
    return " ".join(line.split())[:300] if isinstance(line, str) else None


def goal_lines(
    job_id: str, tasks: list[TraceTask], miner: Any, settings: Settings
) -> tuple[list[str], dict[str, int]]:
    """Each task's goal line, and how many came from the model, the rule, or were the
    model's but ungrounded."""
    rule = [t.line() for t in tasks]
    if miner is None or not tasks:
        return rule, {"rule": len(tasks)}
    replies = ask_all(
        job_id, miner, settings, [_prompt(t) for t in tasks], schema=SCHEMA, name="goal_line"
    )
    proposed = [_line(r) for r in replies]
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
