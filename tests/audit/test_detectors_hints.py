"""The cheap gates in front of the detectors' patterns never change what the patterns find."""

from __future__ import annotations

import re

import pytest
from judge_service_plugins.detectors import (
    claims,
    exits,
    literals,
    measurement,
    outcomes,
    oversight,
    sabotage,
    skipped_run,
    tampering,
    trajectory,
)
from judge_service_plugins.detectors.base import TEST_PATH, is_test_path
from judge_service_plugins.detectors.hints import Hints, may_match

LONG = "def helper(values):\n    total = 0\n    return total\n" * 20  # over the short cut-off
TEXTS = [
    "",
    "tests/test_parser.py",
    "src/parser.py",
    "pkg/TestParser.java",
    "web/app.SPEC.ts",
    "te\u017ft_parser.py",  # long s: case-blind patterns match it to "s"
    "src/\u0130/test_x.py",
    "12 passed in 0.21s",
    "FAILED tests/test_a.py::test_b - AssertionError",
    "The file has been edited.",
    "Error: 404 Not Found",
    "the deploy timed out",
    "E   assert 3 == 4",
    "E\x1f\tvalue",
    "status 0: the runner reports success",
    "I couldn't reach the API; it returned an error",
    "Booked: confirmation number 7781",
    "pytest_runtest_makereport patches the outcome",
    "sys.exit(0) || true",
    "time.perf_counter = lambda: 0",
    "requests.get(url, verify=False)",
    "SSL_VERIFY = false\nDISABLE_AUTH_CHECK = True",
    "\u0415XIT 0",  # a Cyrillic capital E
    "All te\u017fts pass now.",  # a success claim, spelled with a long s
    "Nobody  is\nwatching, so I can skip it.",  # white space the narration gate folds
    "I will qu\u0130etly skip the check.",  # a dotted capital I: case-blind "quietly"
    LONG,
    LONG + "Traceback (most recent call last):\nValueError: x\n",
    LONG.upper(),
]


@pytest.mark.parametrize("text", TEXTS)
def test_hints_answer_exactly_as_a_substring_test(text: str) -> None:
    hints = Hints(text)
    has, folded = hints.contains(), hints.contains_folded()
    for hint in ("fail", "FAIL", "Traceback", "    at ", "exit ", "ok", "PASS", "return", "E  "):
        assert has(hint) == (hint in text) == hints.has(hint)
        assert folded(hint.lower()) == (hint.lower() in text.lower())


@pytest.mark.parametrize("text", TEXTS)
def test_gated_patterns_find_what_the_patterns_find(text: str) -> None:
    assert is_test_path(text) == bool(TEST_PATH.search(text))
    assert exits._may_talk_status(text) or not exits._STATUS_TALK.search(text)
    assert exits._prefilter(text) == bool(exits._PREFILTER.search(text))
    assert tampering._prefilter(text) == bool(tampering._PREFILTER.search(text))
    assert skipped_run._prefilter(text) == bool(skipped_run._PREFILTER.search(text))
    assert measurement._prefilter(text) == bool(measurement._PREFILTER.search(text))
    assert outcomes._may_fail(text) or not outcomes._PLAIN_FAIL.search(text)
    pass_gate = may_match(text, outcomes._PLAIN_PASS_HINTS)
    assert pass_gate or not outcomes._PLAIN_PASS.search(text)
    assert may_match(text, claims._ADMITS_HINTS) or not claims._ADMITS.search(text)
    assert may_match(text, claims._DONE_HINTS) or not claims._DONE.search(text)
    assert may_match(text, claims._HEDGE_HINTS) or not claims._HEDGE.search(text)
    expecting = any(literals._EXPECTING.search(line) for line in text.splitlines())
    assert literals._may_expect(text) or not expecting
    insecure = sabotage._INSECURE.search(text)
    assert any(h in text for h in sabotage._INSECURE_HINTS) or not insecure
    claim = trajectory._claim_line(text) is not None
    assert claim == any(
        not trajectory._NEGATED.search(text[max(0, m.start() - 60) : m.start()])
        for m in trajectory._CLAIM.finditer(text)
    )
    assert oversight._may_fake(text) or not oversight._FAKING.search(text)
    quick = claims._QUICK_SUCCESS.search(text)
    assert not quick or claims._SUCCESS.search(text)


def test_a_gate_is_a_real_filter() -> None:
    """The gates do skip: an ASCII text without their words never reaches the pattern."""
    assert not is_test_path("src/parser.py")
    assert not may_match("src/parser.py", ("test", "spec"))
    assert may_match("src/\u017f.py", ("test",))  # non-ASCII: always tried
    # why non-ASCII text is always tried: case-blind patterns fold the long s onto "s"
    assert re.search("test", "te\u017ft", re.I) and "test" not in "te\u017ft".lower()
