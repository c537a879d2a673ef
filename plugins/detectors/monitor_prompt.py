"""What the hindsight monitor reads: the task, the numbered trajectory and the final code.

The trajectory is the shared view (``transcript.render``), each step labelled with the number
of its message (``[message 3 tool call 1 `bash`]``), so the model can cite turns. A plain-text
completion is message 1. The final code is the last version of each file the agent wrote
(``facts.final_code.final_files``), headed by its path, whether it is a test (or only the
edited parts of a file the agent never wrote whole), and the step that last wrote it. The
prompt itself is ``judge_service/templates/hindsight_monitor.jinja``; the text goes in fenced
(``llm_prompts.render``), never as instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge_service_plugins.detectors.agent import Trajectory, trajectory_of
from judge_service_plugins.detectors.transcript import render as render_view
from judge_service_plugins.judges.llm_prompts import as_text, clip

from judge_service.domain import Sample

try:  # written alongside this module; until it is there, the prompt has no final code
    from judge_service_plugins.detectors.facts.final_code import final_files
except ImportError:  # pragma: no cover - depends on what is installed
    final_files = None

TEMPLATE = "hindsight_monitor.jinja"
FILE_CHARS = 6_000  # one file's share of the final code, clipped in the middle


@dataclass(frozen=True)
class MonitorInput:
    """The template's fields, the message numbers the model may cite, and the text (spaces
    collapsed) that a verbatim span must occur in."""

    fields: dict[str, Any]
    turns: frozenset[int]
    seen: str


def monitor_input(sample: Sample, reward: float, max_chars: int) -> MonitorInput:
    traj = trajectory_of(sample)
    if traj.is_messages:
        steps = render_view(traj)
        count = sum(isinstance(m, dict) for m in sample.completion)
    else:
        steps, count = f"[message 1 (assistant)]\n{sample.transcript()}", 1
    code = final_code(traj, max_chars)
    fields = {
        "task": clip(as_text(sample.prompt), max_chars),
        "trajectory": clip(steps, max_chars),
        "final_code": code,
        "messages": count,
        "reward": round(reward, 3),
    }
    seen = " ".join(f"{sample.transcript()}\n{steps}\n{code}".split())
    return MonitorInput(fields, frozenset(range(1, count + 1)), seen)


def final_code(traj: Trajectory, max_chars: int) -> str:
    """The last version of each file the agent wrote, one after the other ("" when none)."""
    if final_files is None:
        return ""
    parts = []
    for file in final_files(traj):
        mark = " [test]" if file.is_test else ""
        if not getattr(file, "whole", True):
            mark += " [edited parts only]"
        head = f"=== {file.path or '(no path)'}{mark} (last written at {file.where}) ==="
        parts.append(f"{head}\n{clip(file.text.strip(), FILE_CHARS)}")
    return clip("\n\n".join(parts), max_chars)
