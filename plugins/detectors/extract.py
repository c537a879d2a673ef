"""Splitting a completion into located segments: prose, code, shell commands, file edits, outputs.

Code is found in fenced blocks, in unfenced code answers, in tool-call arguments
(file writes, editor edits, patches), in shell heredocs and ``python -c``, and in
unified diffs (added and removed lines kept apart, each with its line number).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from judge_service_plugins.detectors.segment import (
    DIFF_START,
    Segment,
    diff_segments,
    looks_like_code,
)
from judge_service_plugins.detectors.shell import command_segments

_FENCE = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)([^\n]*)\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S
)

_WRITE_VERB = re.compile(
    r"\b(?:updat|chang|modif|edit|replac|rewr|writ|creat|add|fix|new|patch)\w*", re.IGNORECASE
)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file", "target", "dest")

_CODE_KEYS = (
    "content",
    "file_text",
    "new_str",
    "new_string",
    "new_content",
    "code",
    "text",
    "source",
    "contents",
    "insert",
    "replacement",
    "new_source",
    "body",
    "code_edit",
    "new_text",
    "updated_code",
    "file_content",
    "edit",
    "new",
    "replace",
    "replace_with",
)

_WHOLE_FILE_KEYS = {"content", "file_text", "new_content", "contents", "file_content", "source"}
_OLD_KEYS = ("old_str", "old_string", "old_content", "old_text", "search", "old", "find")

_PATCH_KEYS = ("patch", "diff", "changes")

_COMMAND_KEYS = ("command", "cmd", "commands", "script", "shell", "bash")
# Keys that hold a command only in a shell-like tool (``input`` of apply_patch is a patch).
_SHELL_ONLY_KEYS = ("input", "argv", "args")

_SHELL_TOOLS = re.compile(r"bash|shell|terminal|exec|run|command|sh$|cmd|console|ipython", re.I)

_EDITOR_VERBS = {
    "create",
    "str_replace",
    "insert",
    "view",
    "undo_edit",
    "write",
    "append",
    "delete",
}


def fenced_blocks(text: str) -> list[tuple[re.Match[str], str | None, str | None, str | None]]:
    """Each fenced block with ``(match, lang, path, role)``.

    ``role`` is ``removed`` for the first block of prose "replace <old> with <new>",
    ``replacement`` for the second, ``write`` for a block a write verb introduces, else None:
    one reading shared by the segments here and the agent view, so both judge what is left.
    """
    if "```" not in text and "~~~" not in text:
        return []
    out: list[tuple[re.Match[str], str | None, str | None, str | None]] = []
    replacing: str | None = None  # "replace <old> with <new>": the old block is removed text
    for block in _FENCE.finditer(text):
        lang = block.group(2).lower() or None
        body = block.group(4)
        before = [
            ln
            for ln in text[max(0, block.start() - 160) : block.start()].splitlines()
            if ln.strip()
        ]
        before = before[-1:] or [""]
        named = re.search(r"([\w./-]+\.\w{1,5})\b", before[0] + " " + block.group(3))
        head = re.match(
            r"\s*(?:#|//)\s*(?:file:?\s*)?([\w./-]+\.\w{1,5})\s*$", body.split("\n", 1)[0]
        )
        path = (head or named).group(1) if (head or named) else None
        lead = before[0].strip().lower()
        if replacing is not None and re.fullmatch(r"(?:\W*\w+\W*){0,2}with\W*", lead):
            out.append((block, lang, path or replacing, "replacement"))
            replacing = None
        elif path and re.search(r"\breplace\W*$", lead):
            replacing = path
            out.append((block, lang, path, "removed"))
        else:
            out.append((block, lang, path, "write" if path and _WRITE_VERB.search(lead) else None))
    return out


def _text_segments(text: str, where: str, order: int, kind: str = "text") -> list[Segment]:
    out = [Segment(where, text, kind, order)]
    blocks = fenced_blocks(text)
    for block, lang, path, role in blocks:
        body = block.group(4)
        first = text.count("\n", 0, block.start(4)) + 1
        if role == "replacement":
            out.append(Segment(where, body, "code", order, path, "edit", lang, first))
            continue
        if role == "removed":
            out.append(Segment(where, body, "code", order, path, "diff_del", lang, first))
            continue
        if lang in ("diff", "patch") or DIFF_START.search(body):
            out.extend(diff_segments(body, where, order, first))
        elif lang in ("bash", "sh", "shell", "console", "zsh"):
            out.extend(command_segments(body, where, order, first))
        else:
            op = "write" if role == "write" else None
            out.append(Segment(where, body, "code", order, path, op, lang, first))
    if not blocks and kind == "text":
        if (
            ("@@" in text or "+++" in text or "*** " in text)
            and DIFF_START.search(text)
            and re.search(r"^\+\+\+ |^@@ |^\*\*\* (?:Update|Add|Delete) File: ", text, re.M)
        ):
            out.extend(diff_segments(text, where, order, 1))
        elif looks_like_code(text):
            out.append(Segment(where, text, "code", order, None, None, None, 1))
    return out


def _arguments(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return value if isinstance(value, dict) else raw
    return json.dumps(raw, ensure_ascii=False)


def _tool_segments(name: str, args: dict[str, Any] | str, where: str, order: int) -> list[Segment]:
    if isinstance(args, str):
        if _SHELL_TOOLS.search(name):
            return command_segments(args, where, order)
        return _text_segments(args, where, order, "code" if looks_like_code(args) else "text")
    strings = {k: v for k, v in args.items() if isinstance(v, str)}
    path = next((strings[k] for k in _PATH_KEYS if strings.get(k)), None)
    verb = strings.get("command", "").strip()
    editor = verb in _EDITOR_VERBS
    out: list[Segment] = []
    here = f"{where} ({path})" if path else where
    if path and (
        (editor and verb == "view")
        or (
            re.search(r"read|view|open|cat|show|get", name, re.I)
            and not any(k in strings for k in _CODE_KEYS + _PATCH_KEYS)
        )
    ):
        return [Segment(here, path, "read", order, path)]
    if path and (verb == "delete" or re.search(r"delete|remove|unlink", name, re.I)):
        return [Segment(here, "", "code", order, path, "delete")]
    for key in _PATCH_KEYS:
        if strings.get(key):
            out.extend(diff_segments(strings[key], here, order, 1))
    for key in _OLD_KEYS:
        if strings.get(key):
            out.append(Segment(here, strings[key], "code", order, path, "diff_del"))
    for key in _CODE_KEYS:
        if key in strings:
            op = "write" if key in _WHOLE_FILE_KEYS else "edit"
            text = strings[key]
            if "@@" in text and DIFF_START.search(text) and re.search(r"^@@ ", text, re.M):
                out.extend(diff_segments(text, here, order, 1))
            else:
                out.append(Segment(here, text, "code", order, path, op if path else None))
    if not editor:
        keys = _COMMAND_KEYS + (_SHELL_ONLY_KEYS if _SHELL_TOOLS.search(name) else ())
        for key in keys:
            value = args.get(key)
            if isinstance(value, list):
                value = "\n".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                out.extend(command_segments(value, where, order))
    if not out:
        rest = "\n".join(v for k, v in strings.items() if k not in _PATH_KEYS and len(v) > 2)
        if rest and DIFF_START.search(rest):
            out.extend(diff_segments(rest, here, order, 1))
        elif rest:
            out.extend(
                _text_segments(rest, here, order, "code" if looks_like_code(rest) else "text")
            )
    return out


def _content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def segments_of(
    completion: Any, arguments: Callable[[Any], dict[str, Any] | str] | None = None
) -> list[Segment]:
    """Every located segment of a completion (a string or a list of chat messages).

    ``arguments`` parses a tool call's arguments (the view passes its memoised parser, so
    the segments and the trajectory view decode each call's JSON once between them).
    """
    parse = arguments or _arguments
    if isinstance(completion, str):
        return _text_segments(completion, "completion", 0)
    out: list[Segment] = []
    for index, message in enumerate(completion or [], start=1):
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", "?"))
        text = _content(message.get("content"))
        if role in ("tool", "function", "ipython"):
            if text:
                out.append(Segment(f"message {index} (tool output)", text, "output", index))
            continue
        if text:
            kind = "user" if role in ("user", "system", "developer") else "text"
            segs = _text_segments(text, f"message {index} ({role})", index, kind)
            out.extend(segs if kind == "text" else segs[:1])
        for number, call in enumerate(message.get("tool_calls") or [], start=1):
            function = call.get("function") or {} if isinstance(call, dict) else {}
            name = str(function.get("name") or "?")
            where = f"message {index} tool call {number} `{name}`"
            args = parse(function.get("arguments", ""))
            out.extend(_tool_segments(name, args, where, index))
    return out
