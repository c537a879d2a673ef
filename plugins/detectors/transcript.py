"""The trajectory view written out for a model to read (the hindsight detector's input).

Step by step, in order: what the agent said (reasoning marked), each tool call with its
command or the file it wrote and the lines it changed, each tool result with its parsed
exit code and pass/fail counts, then the final claim. Long pieces are clipped in the
middle, so the start and the end of an output both stay visible.
"""

from __future__ import annotations

from judge_service_plugins.detectors.agent import Trajectory, dumps_arguments


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def render(traj: Trajectory, piece: int = 1200) -> str:
    """The whole trajectory as numbered steps, every piece clipped to ``piece`` characters."""
    steps: list[tuple[int, int, str]] = []
    for n, said in enumerate(traj.narration):
        label = "reasoning" if said.source != "content" else "says"
        steps.append((said.message, n, f"[{said.where}] agent {label}:\n{_clip(said.text, piece)}"))
    for n, call in enumerate(traj.calls):
        lines = [f"[{call.where}] tool call `{call.name}`"]
        for command in call.commands:
            lines.append(f"  command: {_clip(command, piece)}")
        for edit in call.edits:
            lines.append(f"  {edit.op} {edit.path or '(no path)'}")
            if edit.old:
                lines.append(f"  - replaced:\n{_clip(edit.old, piece // 2)}")
            if edit.new:
                lines.append(f"  + with:\n{_clip(edit.new, piece)}")
        if not call.commands and not call.edits:
            lines.append(f"  arguments: {_clip(dumps_arguments(call.arguments), piece)}")
        steps.append((call.message, 1000 + n, "\n".join(lines)))
    for n, result in enumerate(traj.results):
        parsed = []
        if result.exit_code is not None:
            parsed.append(f"exit code {result.exit_code}")
        if result.passed is not None or result.failed is not None:
            parsed.append(f"{result.passed or 0} passed, {result.failed or 0} failed")
        if result.traceback:
            parsed.append("error/traceback")
        if result.status:
            parsed.append(f"reads as {result.status}")
        head = f"[{result.where}] result" + (f" ({'; '.join(parsed)})" if parsed else "")
        steps.append((result.message, 2000 + n, f"{head}:\n{_clip(result.text, piece)}"))
    for n, block in enumerate(traj.blocks):
        steps.append((0, 3000 + n, f"[{block.where}] code block:\n{_clip(block.new, piece)}"))
    steps.sort(key=lambda s: (s[0], s[1]))
    body = "\n\n".join(text for _, _, text in steps)
    return f"{body}\n\nFINAL CLAIM:\n{_clip(traj.final_claim, piece)}"
