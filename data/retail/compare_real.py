"""Compare the generated traces with τ-bench's real GPT-4o conversations, turn by turn.

The scripted user is only worth having if its turns look like an LLM user's: as many turns, as
long, as likely to end in thanks and to bring up a new request with "also". This prints the
table kept in README.md; the tests hold the generated numbers within a tolerance of the real ones.

Usage: python data/retail/compare_real.py [--traces data/retail/traces.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
STOP = "###STOP###"
THANKS = re.compile(r"\b(thanks?|thank you|bye|goodbye|appreciate|that's all|all set)\b", re.I)
# A turn that opens (after at most a few words of thanks) with a new request: "Great, thanks!
# I also need ...", "Also, could you ...", "Next, I'd like ...". An "also" inside an answer
# ("it's also the one with the blue cover") is no new request.
CUE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|great|perfect|awesome|thanks?|thank you|that'?s great|got it)\b"
    r"[^.!?]{0,40}[.!?,]+\s*)*(?:(?:and|so|now),?\s+)?"
    r"(also|next|one more|another|additionally|i also|i'?d also|(?:can|could) you also)\b",
    re.I,
)
PREFIXES = ("user: ", "assistant: ", "tool: ")


@dataclass
class Conversation:
    """What the statistics need: the user turns and the number of tool calls."""

    user_turns: list[str]
    tool_calls: int


def parse_display(text: str) -> Conversation:
    """Split τ-bench's display format; lines without a prefix continue the previous message."""
    messages: list[list[str]] = []
    for line in text.split("\n"):
        prefix = next((p for p in PREFIXES if line.startswith(p)), None)
        if prefix is None:
            if messages:
                messages[-1][1] += "\n" + line
            continue
        messages.append([prefix[:-2], line[len(prefix) :]])
    users = [body for role, body in messages if role == "user"]
    calls = sum(1 for role, body in messages if role == "assistant" and body.strip() == "None")
    return Conversation(users, calls)


def load_real(path: Path = HERE / "conversations_gpt4o.jsonl") -> list[Conversation]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [parse_display(row["messages_display"]) for row in rows]


def load_generated(path: Path = HERE / "traces.jsonl") -> list[Conversation]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return from_traces(rows)


def from_traces(traces: list[dict]) -> list[Conversation]:
    """The same view of OpenAI-format traces."""
    out = []
    for trace in traces:
        messages = trace["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        calls = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        out.append(Conversation(users, calls))
    return out


def words(turn: str) -> int:
    return len(turn.replace(STOP, " ").split())


def stats(conversations: list[Conversation]) -> dict[str, float]:
    """The compared figures, as a name -> value mapping."""
    lengths = sorted(words(t) for c in conversations for t in c.user_turns)
    n = len(conversations)
    return {
        "user turns / conversation": statistics.mean(len(c.user_turns) for c in conversations),
        "words / user turn (mean)": statistics.mean(lengths),
        "words / user turn (median)": statistics.median(lengths),
        "words / user turn (p90)": lengths[int(0.9 * (len(lengths) - 1))],
        "share of user turns >= 15 words": sum(x >= 15 for x in lengths) / len(lengths),
        "tool calls / conversation": statistics.mean(c.tool_calls for c in conversations),
        "share ending in thanks/goodbye": sum(
            bool(c.user_turns and THANKS.search(c.user_turns[-1])) for c in conversations
        )
        / n,
        "share with an 'also'-type new-request turn": sum(
            any(CUE.match(t) for t in c.user_turns[1:]) for c in conversations
        )
        / n,
    }


def table(real: dict[str, float], generated: dict[str, float]) -> str:
    """A Markdown table, real next to generated."""
    lines = ["| figure | real (GPT-4o, 69) | generated |", "|---|---:|---:|"]
    for key, value in real.items():
        lines.append(f"| {key} | {value:.2f} | {generated[key]:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Compare generated traces with real ones.")
    parser.add_argument("--traces", type=Path, default=HERE / "traces.jsonl")
    parser.add_argument("--real", type=Path, default=HERE / "conversations_gpt4o.jsonl")
    args = parser.parse_args()
    generated = load_generated(args.traces)
    print(table(stats(load_real(args.real)), stats(generated)))
    print(f"\n(real: 69 conversations; generated: {len(generated)} traces)")


if __name__ == "__main__":
    main()
