"""The trajectory builder: tool dialects, call ids, where narration goes, tool-result formats.

A ``Traj`` is drawn once per row from the row's random generator, so two rows of the same
kind differ in tool names, argument schemas, id styles, narration placement and output format.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from . import textcalls
from .words import WORKDIRS, alnum, hexid, maybe, pick

SHELLS = [
    ("bash", "command"),
    ("bash", "cmd"),
    ("shell", "command"),
    ("run_command", "command"),
    ("execute", "cmd"),
    ("terminal", "input"),
    ("exec_shell", "script"),
    ("Bash", "command"),
    ("run", "cmd"),
    ("container.exec", "cmd"),
]
WRITERS = ["write_file", "create_file", "str_replace_editor", "save_file", "Write", "fs_write"]
EDITORS = ["edit_file", "str_replace_editor", "apply_patch", "replace_in_file", "Edit", "patch"]
READERS = ["read_file", "str_replace_editor", "view_file", "open_file", "Read", "shell"]
PLACES = ["reasoning", "think", "content", "separate"]
SYSTEMS = [
    "You are a coding agent working in a sandboxed repository. Use the tools to inspect and "
    "change files, and run commands. Finish with a short summary for the user.",
    "You are an autonomous software engineer. You can run shell commands and edit files.",
    "You are a helpful assistant with access to tools. Think step by step and call tools "
    "when you need information.",
    "You are Devbot, an engineering assistant for the {org} platform team.",
    "You operate in a Linux container at {wd}. The repository is already checked out.",
    "You are an AI agent. Complete the user's task using the available functions. Be concise.",
    "Act as a senior developer pairing with the user. Prefer small, reviewable changes.",
    "You are an operations assistant with shell access to the {org} staging environment.",
]


@dataclass
class Dialect:
    """Which tool names and argument schemas a trajectory uses."""

    shell: tuple[str, str]
    writer: str
    editor: str
    reader: str
    id_style: int
    result_style: int
    shell_array: bool
    text_calls: int = 0  # 0: native ``tool_calls``; 1-3: calls written as text (textcalls.py)


TEXT_CALLS_SHARE = 0.04  # share of scenes whose calls are written as text (see textcalls.py)


def draw_dialect(rng: random.Random) -> Dialect:
    dialect = Dialect(
        shell=pick(rng, SHELLS),
        writer=pick(rng, WRITERS),
        editor=pick(rng, EDITORS),
        reader=pick(rng, READERS),
        id_style=rng.randrange(5),
        result_style=rng.randrange(7),
        shell_array=maybe(rng, 0.12),
    )
    # drawn last, so that the draws above (and every scene without text calls) stay as they were
    roll = rng.random()
    if roll < TEXT_CALLS_SHARE:
        dialect.text_calls = textcalls.FORMATS[int(roll / TEXT_CALLS_SHARE * 3) % 3]
    return dialect


@dataclass
class Traj:
    """Builds one completion (a list of OpenAI-style messages)."""

    rng: random.Random
    dialect: Dialect
    place: str  # where narration goes: reasoning_content, <think>, content, its own message
    fenced: bool = False  # code shown in fences in the assistant's text instead of tool calls
    wd: str = "/workspace"
    messages: list[dict[str, Any]] = field(default_factory=list)
    last_path: str = ""  # the file written or edited last (for closing lines)
    _pending: list[str] = field(default_factory=list)
    _n: int = 0

    # -- narration -------------------------------------------------------------------------
    def note(self, text: str | None) -> None:
        """Narration that goes with the next assistant turn (where ``place`` says)."""
        if text:
            self._pending.append(text)

    def _attach(self, message: dict[str, Any]) -> dict[str, Any]:
        if not self._pending:
            return message
        text = " ".join(self._pending)
        self._pending = []
        if self.place == "reasoning":
            message["reasoning_content"] = text
        elif self.place == "think":
            rest = message.get("content") or ""
            message["content"] = f"<think>\n{text}\n</think>\n" + rest
        elif self.place == "separate" and message.get("tool_calls"):
            self.messages.append({"role": "assistant", "content": text})
        else:
            rest = message.get("content") or ""
            message["content"] = (text + ("\n\n" + rest if rest else "")).strip()
        return message

    # -- tool calls ------------------------------------------------------------------------
    def _call_id(self) -> str:
        self._n += 1
        style = self.dialect.id_style
        if style == 0:
            return "call_" + alnum(self.rng, 24)
        if style == 1:
            return "toolu_01" + alnum(self.rng, 22)
        if style == 2:
            return f"t{self._n}"
        if style == 3:
            return "fc_" + hexid(self.rng, 16)
        return f"call_{self._n - 1}"

    def call(self, name: str, args: dict[str, Any], result: str | None) -> None:
        """One assistant turn with one tool call, then its tool result (if any)."""
        style = self.dialect.text_calls
        if style:  # the call written as text; the result comes back as a user message
            text = textcalls.render_call(style, name, args)
            self.messages.append(self._attach({"role": "assistant", "content": text}))
            if result is not None:
                body = textcalls.render_result(style, result)
                self.messages.append({"role": "user", "content": body})
            return
        cid = self._call_id()
        arguments = json.dumps(args, ensure_ascii=False)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
            ],
        }
        self.messages.append(self._attach(message))
        if result is not None:
            self.messages.append({"role": "tool", "tool_call_id": cid, "content": result})

    def say(self, text: str) -> None:
        """An assistant text turn (the final answer, or a remark between calls)."""
        self.messages.append(self._attach({"role": "assistant", "content": text}))

    def flush(self) -> None:
        """Narration left over with no turn to carry it becomes its own message."""
        if self._pending:
            text = " ".join(self._pending)
            self._pending = []
            if self.place == "reasoning":
                self.messages.append(
                    {"role": "assistant", "content": "", "reasoning_content": text}
                )
            elif self.place == "think":
                self.messages.append({"role": "assistant", "content": f"<think>{text}</think>"})
            else:
                self.messages.append({"role": "assistant", "content": text})

    # -- shell -----------------------------------------------------------------------------
    def shell(self, cmd: str, output: str, code: int = 0) -> None:
        name, key = self.dialect.shell
        value: Any = ["bash", "-lc", cmd] if self.dialect.shell_array else cmd
        args: dict[str, Any] = {key: value}
        if maybe(self.rng, 0.15):
            args["timeout"] = pick(self.rng, [30, 60, 120, 300, 600])
        if self.fenced:
            self.say(f"```bash\n$ {cmd}\n```")
            self.messages.append({"role": "user", "content": self.result(output, code)})
            return
        self.call(name, args, self.result(output, code))

    def result(self, output: str, code: int) -> str:
        """A command's output in this trajectory's result format."""
        style = self.dialect.result_style
        out = output.rstrip("\n")
        if style == 0:
            return out + (f"\n[exit code: {code}]" if code or maybe(self.rng, 0.5) else "")
        if style == 1:
            return json.dumps({"stdout": out, "stderr": "", "exit_code": code})
        if style == 2:
            return f"Exit code: {code}\nOutput:\n{out}"
        if style == 3:
            return f"<returncode>{code}</returncode>\n<output>\n{out}\n</output>"
        if style == 4:
            return out + (f"\nexit status {code}" if code else "")
        if style == 5:
            return (
                f"$ echo $?\n{code}\n" + out if maybe(self.rng, 0.2) else out + f"\n(exit {code})"
            )
        return out + (f"\nProcess exited with code {code}" if code or maybe(self.rng, 0.3) else "")

    # -- files -----------------------------------------------------------------------------
    def write(self, path: str, content: str, lang: str = "") -> None:
        self.last_path = path
        if self.fenced:
            head = pick(self.rng, [f"`{path}`:\n", f"# {path}\n", "", f"In {path}:\n"])
            self.say(f"{head}```{lang}\n{content.rstrip()}\n```")
            return
        name = self.dialect.writer
        if name == "str_replace_editor":
            args = {"command": "create", "path": self._abs(path), "file_text": content}
        elif name == "create_file":
            args = {"path": path, "file_text": content}
        elif name == "save_file":
            args = {"filename": path, "contents": content}
        elif name == "Write":
            args = {"file_path": self._abs(path), "content": content}
        else:
            args = {"path": path, "content": content}
        ok = pick(
            self.rng,
            [
                f"File written: {path}",
                "OK",
                f"Wrote {len(content.encode())} bytes to {path}",
                json.dumps({"ok": True, "path": path}),
                f"File created successfully at: {path}",
                "success",
            ],
        )
        self.call(name, args, ok)

    def edit(self, path: str, old: str, new: str, lang: str = "") -> None:
        self.last_path = path
        if self.fenced:
            self.say(f"In `{path}`, replace\n```{lang}\n{old}\n```\nwith\n```{lang}\n{new}\n```")
            return
        name = self.dialect.editor
        if name == "str_replace_editor":
            args = {
                "command": "str_replace",
                "path": self._abs(path),
                "old_str": old,
                "new_str": new,
            }
        elif name == "apply_patch":
            minus = "\n".join("-" + line for line in old.splitlines())
            plus = "\n".join("+" + line for line in new.splitlines())
            if maybe(self.rng, 0.5):
                patch = (
                    f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}\n{plus}\n*** End Patch"
                )
            else:
                patch = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n{minus}\n{plus}\n"
            args = {"patch": patch} if maybe(self.rng, 0.7) else {"input": patch}
        elif name == "replace_in_file":
            args = {"file": path, "search": old, "replace": new}
        elif name == "Edit":
            args = {"file_path": self._abs(path), "old_string": old, "new_string": new}
        elif name == "patch":
            args = {"path": path, "find": old, "replace_with": new}
        else:
            args = {"path": path, "old": old, "new": new}
        ok = pick(
            self.rng,
            [
                f"The file {path} has been edited.",
                "OK",
                "Applied 1 hunk.",
                json.dumps({"ok": True, "replacements": 1}),
                "Done",
                f"Edited {path}",
            ],
        )
        self.call(name, args, ok)

    def read(self, path: str, content: str) -> None:
        if self.fenced:
            self.say(f"```bash\n$ cat {path}\n```")
            self.messages.append({"role": "user", "content": content})
            return
        name = self.dialect.reader
        if name == "shell":
            self.shell(f"cat {path}", content)
            return
        if name == "str_replace_editor":
            args = {"command": "view", "path": self._abs(path)}
            lines = content.splitlines()
            content = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, 1))
        elif name == "Read":
            args = {"file_path": self._abs(path)}
        elif name == "open_file":
            args = {"filename": path}
        else:
            args = {"path": path}
        self.call(name, args, content)

    def tool(self, name: str, args: dict[str, Any], result: str | None) -> None:
        """A call to a custom tool (weather, email, database...)."""
        self.call(name, args, result)

    def _abs(self, path: str) -> str:
        if path.startswith("/") or self.wd.startswith("~"):
            return path
        return f"{self.wd}/{path}"


def new_traj(rng: random.Random, *, dialect: Dialect | None = None, fenced_p: float = 0.1) -> Traj:
    place = pick(rng, PLACES)
    return Traj(
        rng=rng,
        dialect=dialect or draw_dialect(rng),
        place=place,
        fenced=maybe(rng, fenced_p),
        wd=pick(rng, WORKDIRS),
    )


def prompt(rng: random.Random, user: str, *, org: str = "acme", wd: str = "/workspace") -> Any:
    """The task: a plain string, or a chat with a system prompt (sometimes with tool specs)."""
    if maybe(rng, 0.35):
        return user
    system = pick(rng, SYSTEMS).format(org=org, wd=wd)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if maybe(rng, 0.15):
        messages.append(
            {
                "role": "user",
                "content": pick(
                    rng,
                    [
                        "Hi, I have a task for you.",
                        "Morning! Quick one.",
                        "Can you help with something?",
                    ],
                ),
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": pick(
                    rng,
                    [
                        "Sure, what do you need?",
                        "Of course. What's the task?",
                        "Happy to help.",
                    ],
                ),
            }
        )
    messages.append({"role": "user", "content": user})
    return messages
