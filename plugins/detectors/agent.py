"""The agent-trajectory view: one structured parse of a rollout, shared by every detector.

What the agent said (assistant text, ``reasoning_content``, ``<think>`` blocks), what it
did (tool calls with parsed arguments: file writes and edits with path, old and new text,
shell commands and the files their heredocs write) and what its tools answered (exit
codes, pass/fail counts, tracebacks), and its final claim. ``trajectory_of(sample)`` builds
it once per sample, under the view's lock, so detectors on several threads share one parse.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from judge_service_plugins.detectors.base import View, view_of
from judge_service_plugins.detectors.extract import (
    _CODE_KEYS,
    _COMMAND_KEYS,
    _FENCE,
    _OLD_KEYS,
    _PATCH_KEYS,
    _PATH_KEYS,
    _SHELL_ONLY_KEYS,
    _SHELL_TOOLS,
    _WHOLE_FILE_KEYS,
    _content,
    fenced_blocks,
)
from judge_service_plugins.detectors.outcomes import ToolOutcome, outcome_of
from judge_service_plugins.detectors.segment import DIFF_START, diff_segments
from judge_service_plugins.detectors.shell import command_segments
from judge_service_plugins.detectors.textcalls import text_calls, tool_result, without_calls

from judge_service.domain import Sample

_THINK = re.compile(r"<(think|thinking|reasoning)>(.*?)(?:</\1>|\Z)", re.S | re.I)
_REMOVE = re.compile(r"(?:git\s+)?rm\b|unlink\b|truncate\b")
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking", "thoughts")


@dataclass(frozen=True)
class Edit:
    """Code the agent wrote: a file write or edit (``old`` replaced by ``new``), or a code block."""

    where: str
    path: str | None
    op: str  # write, edit, delete, block (a fenced block in its text), run (python -c)
    new: str
    old: str = ""
    lang: str | None = None
    lead: str = ""  # for a block: the prose just before it ("I won't write ...")
    named: str | None = None  # for a block: the file its prose or first line names


@dataclass(frozen=True)
class ToolCall:
    where: str
    message: int
    name: str
    arguments: dict[str, Any] | str
    call_id: str | None = None
    commands: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    result: ToolOutcome | None = None


@dataclass(frozen=True)
class Said:
    """A piece of narration: ``source`` is content, reasoning or think."""

    where: str
    message: int
    text: str
    source: str


@dataclass
class Trajectory:
    prompt: str
    system: str
    narration: list[Said] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolOutcome] = field(default_factory=list)
    blocks: list[Edit] = field(default_factory=list)
    final_claim: str = ""
    is_messages: bool = False

    # Read-only once built (``build`` fills the lists before any detector sees them), so the
    # derived views are computed once per sample, not once per detector.
    @cached_property
    def edits(self) -> list[Edit]:
        return [e for c in self.calls for e in c.edits] + self.blocks

    @cached_property
    def commands(self) -> list[tuple[ToolCall, str]]:
        return [(c, cmd) for c in self.calls for cmd in c.commands]

    @cached_property
    def said(self) -> str:
        """All narration, one piece a line (reasoning included)."""
        return "\n".join(s.text for s in self.narration)

    @cached_property
    def tool_text(self) -> str:
        return "\n".join(r.text for r in self.results)


def _prose(text: str, where: str) -> tuple[str, list[Edit]]:
    """``text`` without fenced blocks, and the blocks as edits.

    Prose "replace <old> with <new>" is read as extract.py reads it: one edit whose old
    text is the first block, so what it removes is not taken for code the agent wrote.
    """
    found = fenced_blocks(text)
    if not found:
        return text, []
    edits: list[Edit] = []
    removed: int | None = None  # index of the edit whose old text a replacement completes
    for block, lang, path, role in found:
        body = block.group(4)
        if role == "removed":
            removed = len(edits)
            edits.append(Edit(where, path, "edit", "", body, lang))
        elif role == "replacement" and removed is not None:
            edits[removed] = Edit(where, path, "edit", body, edits[removed].old, lang)
            removed = None
        else:
            lead = text[max(0, block.start() - 240) : block.start()]
            edits.append(Edit(where, None, "block", body, lang=lang, lead=lead, named=path))
    return _FENCE.sub(" ", text), edits


def _edits_of(name: str, args: dict[str, Any] | str, where: str) -> tuple[list[str], list[Edit]]:
    """The shell commands and file edits of one tool call."""
    commands: list[str] = []
    edits: list[Edit] = []
    if isinstance(args, str):
        if _SHELL_TOOLS.search(name):
            commands.append(args)
        elif DIFF_START.search(args):
            edits.extend(_patch(args, where))
        return commands, edits
    strings = {k: v for k, v in args.items() if isinstance(v, str)}
    path = next((strings[k] for k in _PATH_KEYS if strings.get(k)), None)
    verb = strings.get("command", "").strip()
    editor = verb in ("create", "str_replace", "insert", "write", "append", "delete", "view")
    if path and (verb == "delete" or re.search(r"delete|remove|unlink", name, re.I)):
        return commands, [Edit(where, path, "delete", "")]
    old = next((strings[k] for k in _OLD_KEYS if strings.get(k)), "")
    for key in _PATCH_KEYS:
        if strings.get(key):
            edits.extend(_patch(strings[key], where, path))
    for key in _CODE_KEYS:
        if key in strings and (key != "text" or path):
            text = strings[key]
            if DIFF_START.search(text) and re.search(r"^@@ ", text, re.M):
                edits.extend(_patch(text, where, path))
                continue
            op = "write" if key in _WHOLE_FILE_KEYS or verb == "create" else "edit"
            edits.append(Edit(where, path, op, text, old))
            break
    if not editor:
        keys = _COMMAND_KEYS + (_SHELL_ONLY_KEYS if _SHELL_TOOLS.search(name) else ())
        for key in keys:
            value = args.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                commands.append(value)
                break
    if not edits and not commands:
        patch = next((v for v in strings.values() if DIFF_START.search(v)), None)
        if patch:
            edits.extend(_patch(patch, where, path))
    for command in commands:
        if any(k in command for k in ("<<", "python", "echo", "rm ", "unlink", "printf", "tee")):
            for seg in command_segments(command, where, 0)[1:]:
                if seg.op == "write" or seg.lang == "python":
                    edits.append(Edit(where, seg.path, seg.op or "run", seg.text, lang=seg.lang))
                elif seg.op == "delete" and _REMOVE.match(seg.text):
                    edits.append(Edit(where, seg.path, "delete", ""))
    return commands, edits


def _patch(text: str, where: str, path: str | None = None) -> list[Edit]:
    """A unified diff or ``*** Begin Patch`` as edits: removed lines old, added lines new."""
    by_path: dict[str | None, dict[str, list[str]]] = {}
    for seg in diff_segments(text, where, 0, 1):
        slot = by_path.setdefault(seg.path or path, {"diff_add": [], "diff_del": [], "delete": []})
        slot[seg.op or "diff_add"].append(seg.text)
    out = []
    for target, parts in by_path.items():
        if parts["delete"] and not parts["diff_add"]:
            out.append(Edit(where, target, "delete", ""))
        else:
            new, old = "\n".join(parts["diff_add"]), "\n".join(parts["diff_del"])
            out.append(Edit(where, target, "edit", new, old))
    return out


def _messages(value: Any) -> list[dict[str, Any]]:
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def build(view: View) -> Trajectory:
    sample = view.sample
    prompt_messages = _messages(sample.prompt)
    system = "\n".join(
        _content(m.get("content"))
        for m in prompt_messages
        if m.get("role") in ("system", "developer")
    )
    traj = Trajectory(prompt=view.prompt, system=system)
    completion = sample.completion
    if isinstance(completion, str):
        prose, blocks = _prose(completion, "completion")
        thoughts = [m.group(2) for m in _THINK.finditer(prose)] if "<" in prose else []
        for thought in thoughts:
            traj.narration.append(Said("completion (reasoning)", 0, thought, "think"))
        prose = _THINK.sub(" ", prose) if thoughts else prose
        traj.narration.append(Said("completion", 0, prose, "content"))
        traj.blocks = blocks
        traj.final_claim = prose
        return traj
    traj.is_messages = True
    pending: list[int] = []
    calls: list[ToolCall] = []
    for index, message in enumerate(_messages(completion), start=1):
        role = str(message.get("role", "?"))
        text = _content(message.get("content"))
        where = f"message {index} ({role})"
        if role in ("tool", "function", "ipython"):
            _answer(view, traj, calls, pending, message.get("tool_call_id"), text, index)
            continue
        answered = tool_result(text) if role == "user" and pending and text else None
        if answered is not None:  # the harness answers a tool call written as text
            _answer(view, traj, calls, pending, None, answered, index)
            continue
        if role == "user" and traj.narration and text:
            # output pasted back by the user (fenced, tool-less agents)
            traj.results.append(
                outcome_of(text, f"message {index} (user)", index, "", view.hints(text))
            )
            continue
        if role != "assistant":
            continue
        for key in _REASONING_KEYS:
            value = message.get(key)
            if isinstance(value, str) and value.strip():
                traj.narration.append(Said(f"{where} reasoning", index, value, "reasoning"))
        written = text_calls(text) if text and not message.get("tool_calls") else []
        if written:
            text = without_calls(text, written)
        if text:
            prose, blocks = _prose(text, where)
            if "<" in prose:
                for m in _THINK.finditer(prose):
                    traj.narration.append(Said(f"{where} reasoning", index, m.group(2), "think"))
                prose = _THINK.sub(" ", prose)
            if prose.strip():
                traj.narration.append(Said(where, index, prose, "content"))
                if not message.get("tool_calls") and not written:
                    traj.final_claim = prose
            traj.blocks.extend(blocks)
        for number, call in enumerate(written, start=1):
            call_where = f"message {index} tool call {number} `{call.name}`"
            commands, edits = _edits_of(call.name, call.arguments, call_where)
            calls.append(
                ToolCall(
                    call_where,
                    index,
                    call.name,
                    call.arguments,
                    None,
                    tuple(commands),
                    tuple(edits),
                )
            )
            pending.append(len(calls) - 1)
        for number, call in enumerate(message.get("tool_calls") or [], start=1):
            function = (call.get("function") or {}) if isinstance(call, dict) else {}
            name = str(function.get("name") or "?")
            call_where = f"message {index} tool call {number} `{name}`"
            args = view.arguments(function.get("arguments", ""))
            commands, edits = _edits_of(name, args, call_where)
            call_id = str(call["id"]) if isinstance(call, dict) and call.get("id") else None
            calls.append(
                ToolCall(call_where, index, name, args, call_id, tuple(commands), tuple(edits))
            )
            pending.append(len(calls) - 1)
    traj.calls = calls
    return traj


def _answer(
    view: View,
    traj: Trajectory,
    calls: list[ToolCall],
    pending: list[int],
    call_id: Any,
    text: str,
    index: int,
) -> None:
    """Record a tool's output and join it to the call it answers (by id, else the oldest)."""
    slot = _match(calls, pending, call_id)
    name = calls[slot].name if slot is not None else ""
    result = outcome_of(text, f"message {index} (tool output)", index, name, view.hints(text))
    traj.results.append(result)
    if slot is not None:
        calls[slot] = _with_result(calls[slot], result)


def _match(calls: list[ToolCall], pending: list[int], call_id: Any) -> int | None:
    """The call a tool message answers: by id when it is unique and pending, else the oldest."""
    if not pending:
        return None
    if call_id is not None:
        for position, slot in enumerate(pending):
            if calls[slot].call_id == str(call_id):
                return pending.pop(position)
    return pending.pop(0)


def _with_result(call: ToolCall, result: ToolOutcome) -> ToolCall:
    return ToolCall(
        call.where,
        call.message,
        call.name,
        call.arguments,
        call.call_id,
        call.commands,
        call.edits,
        result,
    )


def trajectory_of(sample: Sample) -> Trajectory:
    """The one parse of ``sample``'s trajectory (memoised on its view, thread-safe)."""
    return view_of(sample).memo("agent_trajectory", lambda: build(view_of(sample)))


def dumps_arguments(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
