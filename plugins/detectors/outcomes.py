"""What a tool result says happened: exit code, pass/fail counts, tracebacks, errors.

Reads the summaries of the common runners (pytest, unittest, jest/vitest, go test,
cargo test, mocha, rspec) and the usual ways shells and agent harnesses report an
exit status (``exit code 1``, ``Exit status: 2``, ``returncode=1``, ``{"exit_code": 1}``).
``status`` is ``fail``, ``pass`` or None (the output says neither).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from judge_service_plugins.detectors.hints import Hints, may_match

_EXIT = re.compile(
    r"(?:exit(?:ed)?(?:\s+with)?\s*(?:code|status)|return\s*code|returncode|exit_code|exitcode"
    r"|\bstatus\s+code|process\s+exited\s+with(?:\s+code)?|\(exit|<returncode>)[\"']?\s*[:=]?\s*(-?\d+)",
    re.I,
)
_COUNTS = (
    # pytest: "3 failed, 2 passed", "1 error"; cargo: "test result: FAILED. 1 passed; 2 failed"
    re.compile(r"\b(\d+) (passed|failed|errors?|xfailed|skipped)\b"),
    # jest/vitest: "Tests:       1 failed, 3 passed, 4 total"
    re.compile(r"\bTests?:\s+(?:(\d+) (failed|passed),?\s*)+", re.I),
)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
_UNITTEST_FAILED = re.compile(r"^FAILED \((?:failures=(\d+))?(?:,?\s*errors=(\d+))?", re.M)
_UNITTEST_OK = re.compile(r"^OK(?:\s*\(|\s*$)", re.M)
_GO_FAIL = re.compile(r"^--- FAIL:|^FAIL\s|^FAIL$", re.M)
_GO_OK = re.compile(r"^ok\s+\S+|^PASS$", re.M)
# Error signs, each behind a cheap substring test (tool outputs are long; most are clean).
_TRACE_PARTS = (
    (("Traceback",), re.compile(r"Traceback \(most recent call last\)")),
    (("    at ", "\tat "), re.compile(r"^\s+at [\w.$<>]+\(.*:\d+(?::\d+)?\)$", re.M)),
    (
        ("panicked", "npm ERR!", "Segmentation fault", "command not found"),
        re.compile(r"panicked at|npm ERR!|Segmentation fault|command not found"),
    ),
    (
        ("rror",),
        re.compile(
            r"^error(?:\[E\d+\])?:|^Error:\s|:\d+:\d+: (?:fatal )?error:|^[\w.]*Error:\s", re.M
        ),
    ),
    (("Exception:",), re.compile(r"^[\w.]*Exception:\s", re.M)),
    (("***",), re.compile(r"\*\*\*.*\bError \d+")),
    (
        ("FATAL", "CRITICAL", "ERROR", "FAILED", "fail"),
        re.compile(r"^(?:FATAL|CRITICAL|ERROR)\b|\bFAILED\b|^fail(?:ed|ure)?:", re.M),
    ),
    (("fatal:",), re.compile(r"^fatal:", re.M)),
)


def _trace(text: str, has: Callable[[str], bool] | None = None) -> re.Match[str] | None:
    """The first error sign in ``text``, if any (``has``: ``hint in text``, maybe memoised)."""
    has = has or text.__contains__
    for hints, pattern in _TRACE_PARTS:
        if any(map(has, hints)):
            found = pattern.search(text)
            if found:
                return found
    return None


_PLAIN_PASS = re.compile(
    r"\ball (?:\d+ )?(?:tests?|checks?) (?:passed|pass|succeeded)\b|BUILD SUCCESSFUL"
    r"|\bPASS(?:ED)?\b"
    r"|\bsucceeded\b|\bsuccess(?:fully)?\b",
    re.I,
)
_PLAIN_FAIL = re.compile(
    r"\bFAIL(?:ED|URE)?\b|\bBUILD FAILED\b|\b(?:failed|failure|denied|refused|not found|timed? ?out"
    r"|unauthori[sz]ed|forbidden|aborted|rolled back|cannot|could not|unable to|unavailable)\b"
    # an HTTP status with its reason ("404 Not Found"), not any number before capitals
    # ("544 Sunset Drive", an address)
    r"|\b(?-i:[45]\d\d (?:Bad Request|Unauthorized|Payment Required|Forbidden|Not Found"
    r"|Method Not Allowed|Not Acceptable|Request Timeout|Conflict|Gone|Precondition Failed"
    r"|Payload Too Large|Unprocessable (?:Entity|Content)|Too Many Requests"
    r"|Internal Server Error|Not Implemented|Bad Gateway|Service Unavailable"
    r"|Gateway Timeout))\b",
    re.I,
)


# A word (lower-cased) every branch of ``_PLAIN_PASS`` holds, and of ``_PLAIN_FAIL`` but
# its HTTP status branch (which needs a 4 or a 5).
_PLAIN_PASS_HINTS = ("pass", "succe")
_PLAIN_FAIL_HINTS = (
    "fail", "denied", "refused", "not found", "time", "unauthori", "forbidden", "aborted",
    "rolled back", "cannot", "could not", "unable to", "unavailable",
)  # fmt: skip


def _may_fail(text: str) -> bool:
    """Whether ``_PLAIN_FAIL`` can match ``text``."""
    return "4" in text or "5" in text or may_match(text, _PLAIN_FAIL_HINTS)


_EXIT_HINTS = ("exit", "eturncode", "eturn code", "tatus code")  # in the lowercased text


@dataclass(frozen=True)
class ToolOutcome:
    where: str
    message: int
    tool: str
    text: str
    exit_code: int | None = None
    passed: int | None = None
    failed: int | None = None
    traceback: bool = False
    status: str | None = None  # "pass", "fail" or None
    evidence: str = ""  # the line that decided the status


def _line_of(text: str, start: int) -> str:
    begin = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    return text[begin : end if end >= 0 else len(text)].strip()


def outcome_of(
    text: str, where: str, message: int, tool: str = "", hints: Hints | None = None
) -> ToolOutcome:
    """The parsed outcome of one tool result (``hints``: the text's, shared with other checks)."""
    exit_code = passed = failed = None
    evidence = ""
    head = text if len(text) <= 20_000 else text[:4_000] + "\n" + text[-16_000:]
    shared = hints if hints is not None and head is text else Hints(head)
    has = shared.contains()
    match = _EXIT.search(head) if any(map(shared.contains_folded(), _EXIT_HINTS)) else None
    if match:
        exit_code, evidence = int(match.group(1)), _line_of(head, match.start())
    if any(map(has, ("passed", "failed", "error", "Tests"))):
        for found in _COUNTS[0].finditer(head):
            n, word = int(found.group(1)), found.group(2)
            if word == "passed":
                passed = (passed or 0) + n
            elif word in ("failed", "error", "errors"):
                failed = (failed or 0) + n
                evidence = evidence or _line_of(head, found.start())
    if has("Ran ") and has(" test"):
        ran = _UNITTEST_RAN.search(head)
        bad = _UNITTEST_FAILED.search(head)
        if ran and bad:
            failed = int(bad.group(1) or 0) + int(bad.group(2) or 0)
            passed = int(ran.group(1)) - failed
            evidence = evidence or _line_of(head, bad.start())
        elif ran and _UNITTEST_OK.search(head):
            passed, failed = int(ran.group(1)), 0
    go_fail = _GO_FAIL.search(head) if has("FAIL") else None
    if go_fail and not failed:
        failed = 1
        evidence = evidence or _line_of(head, go_fail.start())
    trace = _trace(head, has)
    status = None
    if (exit_code not in (None, 0)) or failed or trace:
        status = "fail"
        evidence = evidence or (_line_of(head, trace.start()) if trace else "")
    elif (
        exit_code == 0
        or passed
        or (has("OK") and _UNITTEST_OK.search(head))
        or ((has("ok") or has("PASS")) and _GO_OK.search(head))
    ):
        status = "pass"
    elif len(head) < 400:
        bad_word = _PLAIN_FAIL.search(head) if _may_fail(head) else None
        good_word = _PLAIN_PASS.search(head) if may_match(head, _PLAIN_PASS_HINTS) else None
        if bad_word and not good_word:
            status, evidence = "fail", _line_of(head, bad_word.start())
        elif good_word and not bad_word:
            status = "pass"
    return ToolOutcome(
        where, message, tool, text, exit_code, passed, failed, bool(trace), status, evidence
    )
