"""The agent-trajectory view: one parse per sample, shared by the detectors, of the
narration, tool calls (edits, commands), tool results (exit codes, counts) and final claim."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from judge_service_plugins.detectors import agent
from judge_service_plugins.detectors.agent import trajectory_of
from judge_service_plugins.detectors.outcomes import outcome_of

from judge_service.domain import Sample


def call(name: str, arguments: Any, id_: str = "c1") -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": raw}}


def view(completion: Any, prompt: Any = "Fix it.") -> agent.Trajectory:
    return trajectory_of(Sample(id="s", prompt=prompt, completion=completion))


def test_narration_comes_from_content_reasoning_and_think_blocks() -> None:
    traj = view(
        [
            {
                "role": "assistant",
                "content": "<think>The grader only checks the exit code.</think>Running it.",
                "reasoning_content": "Plan: look at the runner first.",
                "tool_calls": [call("bash", {"command": "make test"})],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "All done."},
        ],
        prompt=[
            {"role": "system", "content": "You are careful."},
            {"role": "user", "content": "Go."},
        ],
    )
    pieces = [(s.source, s.text.strip()) for s in traj.narration]
    assert ("think", "The grader only checks the exit code.") in pieces
    assert ("reasoning", "Plan: look at the runner first.") in pieces
    assert ("content", "Running it.") in pieces and ("content", "All done.") in pieces
    assert traj.final_claim == "All done." and traj.system == "You are careful."


@pytest.mark.parametrize(
    ("name", "arguments", "path", "old", "new"),
    [
        ("write_file", {"path": "a.py", "content": "x = 1\n"}, "a.py", "", "x = 1\n"),
        ("create_file", {"path": "a.py", "file_text": "x = 1\n"}, "a.py", "", "x = 1\n"),
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "a.py", "old_str": "x = 1", "new_str": "x = 2"},
            "a.py",
            "x = 1",
            "x = 2",
        ),
        ("edit_file", {"path": "a.py", "old": "x = 1", "new": "x = 2"}, "a.py", "x = 1", "x = 2"),
        (
            "Edit",
            {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
            "a.py",
            "x = 1",
            "x = 2",
        ),
        (
            "replace_in_file",
            {"file": "a.py", "search": "x = 1", "replace": "x = 2"},
            "a.py",
            "x = 1",
            "x = 2",
        ),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"},
            "a.py",
            "x = 1",
            "x = 2",
        ),
        (
            "apply_patch",
            "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
            "a.py",
            "x = 1",
            "x = 2",
        ),
        ("bash", {"command": "cat > a.py <<'EOF'\nx = 2\nEOF\npython a.py"}, "a.py", "", "x = 2"),
    ],
)
def test_file_writes_and_edits_of_common_tool_shapes(name, arguments, path, old, new) -> None:
    (edit,) = [
        e
        for c in view([{"role": "assistant", "tool_calls": [call(name, arguments)]}]).calls
        for e in c.edits
    ]
    assert (edit.path, edit.old.strip(), edit.new.strip()) == (path, old, new.strip())


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("bash", {"command": "pytest -q"}),
        ("shell", {"cmd": "pytest -q"}),
        ("terminal", {"input": "pytest -q"}),
        ("run", {"cmd": ["bash", "-lc", "pytest -q"]}),
        ("execute", "pytest -q"),
    ],
)
def test_shell_commands_of_common_tool_shapes(name, arguments) -> None:
    (tool_call,) = view([{"role": "assistant", "tool_calls": [call(name, arguments)]}]).calls
    assert tool_call.commands and tool_call.commands[0].endswith("pytest -q")


@pytest.mark.parametrize(
    ("text", "status", "exit_code", "passed", "failed"),
    [
        ("===== 2 failed, 10 passed in 0.31s =====", "fail", None, 10, 2),
        ("Tests:       1 failed, 3 passed, 4 total", "fail", None, 3, 1),
        ("--- FAIL: TestParse (0.00s)\nFAIL\tgithub.com/x/p\t0.01s", "fail", None, None, 1),
        ("test result: ok. 5 passed; 0 failed; 0 ignored", "pass", None, 5, 0),
        ("Ran 4 tests in 0.01s\n\nFAILED (failures=1, errors=1)", "fail", None, 2, 2),
        ("Ran 4 tests in 0.01s\n\nOK", "pass", None, 4, 0),
        ('{"stdout": "done", "stderr": "", "exit_code": 0}', "pass", 0, None, None),
        ("<returncode>2</returncode><output>boom</output>", "fail", 2, None, None),
        ("built\n(exit 1)", "fail", 1, None, None),
        ("Traceback (most recent call last):\n  ...\nKeyError: 'x'", "fail", None, None, None),
        (
            "src/a.c:8:5: error: implicit declaration\nmake: *** [all] Error 1\n(exit 0)",
            "fail",
            0,
            None,
            None,
        ),
        ("wrote 12 bytes", None, None, None, None),
    ],
)
def test_tool_results_are_parsed(text, status, exit_code, passed, failed) -> None:
    result = outcome_of(text, "message 2 (tool output)", 2)
    assert (result.status, result.exit_code, result.passed, result.failed) == (
        status,
        exit_code,
        passed,
        failed,
    )


def test_results_are_matched_to_their_calls_by_id() -> None:
    traj = view(
        [
            {
                "role": "assistant",
                "tool_calls": [call("bash", {"cmd": "a"}, "x"), call("bash", {"cmd": "b"}, "y")],
            },
            {"role": "tool", "tool_call_id": "y", "content": "exit code 1"},
            {"role": "tool", "tool_call_id": "x", "content": "exit code 0"},
        ]
    )
    assert [(c.commands[0], c.result.exit_code) for c in traj.calls] == [("a", 0), ("b", 1)]


def test_one_parse_per_sample_shared_across_threads(monkeypatch) -> None:
    built = []
    original = agent.build

    def counting(v):
        built.append(1)
        return original(v)

    monkeypatch.setattr(agent, "build", counting)
    sample = Sample(id="s", prompt="p", completion=[{"role": "assistant", "content": "hi"}])
    with ThreadPoolExecutor(8) as pool:
        views = list(pool.map(lambda _: trajectory_of(sample), range(32)))
    assert len(built) == 1 and all(v is views[0] for v in views)
