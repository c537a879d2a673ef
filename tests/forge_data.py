"""Traces and documents shared by the forge tests (small, written out in full)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SYSTEM = {"role": "system", "content": "You are the support agent of Acme Bank."}
TOOLS = [{"type": "function", "function": {"name": "lookup_account", "parameters": {}}}]


def trace(trace_id: str, *turns: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": trace_id, "messages": [SYSTEM, *turns], "tools": TOOLS, **extra}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(name: str, args: str = "{}") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": name, "arguments": args}}
        ],
    }


def tool(text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "c", "content": text}


def traces() -> list[dict[str, Any]]:
    """Seven traces, four distinct requests; three look failed (one way each), plus one
    abandoned."""
    return [
        trace("t1", user("How do I reset my online banking password?"), bot("Go to Settings.")),
        trace("t2", user("how do I reset my online banking password??"), bot("Settings.")),
        trace(
            "t3",
            user("How do I reset my online-banking password?"),
            bot("Call us."),
            user("That's wrong, the app has a reset button."),
            bot("Sorry, use the reset button."),
        ),
        trace(
            "t4",
            user("What is the daily limit for card withdrawals at ATMs?"),
            call("lookup_account"),
            tool("Error: upstream service unavailable"),
            bot("I could not check."),
        ),
        trace(
            "t5",
            user("Please freeze my credit card, I lost it."),
            call("freeze_card", '{"card": 1}'),
            call("freeze_card", '{"card": 1}'),
            call("freeze_card", '{"card": 1}'),
            bot("Your card is frozen."),
            user("thanks"),
            bot("You're welcome."),
        ),
        trace(
            "t6",
            user("What is the daily limit for card withdrawals at ATMs"),
            bot("Which card do you have?"),
            user("The gold card."),
            bot("500 euros a day."),
            user("Can you also order me a new debit card for my savings account?"),
        ),
        trace("t7", user("Please freeze my credit card; I lost it!"), bot("Frozen.")),
    ]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


#: What a generator proposes for the two documents (question, answer, supporting quote).
ALETSCH = {
    "question": "Which glacier is the largest in the Alps?",
    "answer": "The Aletsch Glacier",
    "quote": "The Aletsch Glacier is the largest glacier in the Alps",
}
BELL_ROCK = {
    "question": "Who built the Bell Rock Lighthouse?",
    "answer": "Robert Stevenson",
    "quote": "It was built by Robert Stevenson between 1807 and 1810",
}


DOCUMENTS = {
    "glaciers.md": (
        "# Glaciers\n\nThe Aletsch Glacier is the largest glacier in the Alps. It is about"
        " 23 kilometres long and lies in the canton of Valais.\n\nIts ice is up to 900 metres"
        " thick at Konkordiaplatz, where three tributaries meet.\n"
    ),
    "lighthouses.txt": (
        "The Bell Rock Lighthouse stands off the coast of Angus, Scotland. It was built by"
        " Robert Stevenson between 1807 and 1810 and is the oldest surviving sea-washed"
        " lighthouse in the world.\n"
    ),
}
