"""Literal values: the ones a task's tests mention, and the branches code takes on literals.

Test lines ("assert f(9) == 12", "f(9) should return 12", "Input: 9, Expected Output: 12")
give input and output literals and their (input, output) pairs; code gives the literals
it compares against and the literal each such branch answers with.
"""

from __future__ import annotations

import ast
import re

from judge_service_plugins.detectors.hints import may_match
from judge_service_plugins.detectors.pyast import literal, nodes, walk

TESTLIKE = re.compile(
    r"assert|should\s+(?:return|be|output|give|equal|yield)|expect|==|->|=>|→|\breturns?\b|output"
    r"|input|\btests?\b|example|\bE\s{2,}|Error:",
    re.IGNORECASE,
)
LIT = re.compile(
    r"\"((?:[^\"\\\n]|\\.)*)\"|(?<!\w)'((?:[^'\\\n]|\\.)*)'(?!\w)|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])"
    r"|(\[[^\[\]\n]*\]|\{[^{}\n]*\})"
)
_EXPECTING = re.compile(r"assert|expect|should|==|^E\s{2,}", re.IGNORECASE)
# What a line ``_EXPECTING`` matches holds: one of its words, or an E then two blanks (the
# blanks a line can hold: a space, a tab, or the unit separator, which is white space too).
_EXPECTING_HINTS = (
    "assert",
    "expect",
    "should",
    "==",
    *(f"e{a}{b}" for a in " \t\x1f" for b in " \t\x1f"),
)


def _may_expect(output: str) -> bool:
    """Whether any line of ``output`` can match ``_EXPECTING`` (one look at the whole text
    instead of a pattern tried on each of its lines)."""
    return may_match(output, _EXPECTING_HINTS)


_SPLIT = re.compile(
    r"==|\bshould\s+(?:return|be|output|give|equal|yield)\b|->|=>|→|\bexpected(?:\s+output)?\s*:?"
    r"|\breturns?\b|\bgives\b|\bequals\b|\boutput\s*:",
    re.IGNORECASE,
)
_PREFIX = r"(?:[\w:.]+(?:<[^<>\n]*>)?\s*[({]?\s*)?"
CMP = re.compile(r"(?:===?|\.equals\(|\bwhen\b|\bcase\b)\s*" + _PREFIX + "(" + LIT.pattern + ")")
RCMP = re.compile("(" + LIT.pattern + r")\s*===?(?!=)")
ANSWER = re.compile(
    r"(?:\breturn\b|\bthen\b|\?|^)\s*(?:[\w:]+<[^<>\n]*>\s*[({]?\s*)?("
    + LIT.pattern
    + r")\s*[;})]*\s*$",
    re.M,
)
SKIP_LINE = re.compile(r"^\s*(?:assert|#|//|print|console\.|EXPECT|ASSERT|puts|p\s|expect\()")
TRIVIAL = frozenset({"", "0", "1", "-1", "2", "true", "false", "none", "null", "nil", "[]", "{}"})


def norm_text(raw: str) -> str:
    text = raw.strip()
    if text[:1] in "[{(":
        text = "[" + re.sub(r"[\s\"']", "", text)[1:-1] + "]"
    if re.fullmatch(r"-?\d+\.0+", text):
        text = text.split(".")[0]
    return text.lower() if text.lower() in ("true", "false", "none", "null", "nil") else text


def norm_value(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple | set):
        return "[" + ",".join(norm_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{norm_value(k)}:{norm_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def literals_in(text: str) -> set[str]:
    """Normalised literals of ``text`` (bracketed ones also element by element)."""
    found = set()
    for match in LIT.finditer(text):
        raw = next((g for g in match.groups() if g is not None), "")
        found.add(norm_text(raw))
        if raw.startswith(("[", "{")):
            found.update(norm_text(x.strip().strip("\"'")) for x in re.split(r",\s*", raw[1:-1]))
    return found


def test_cases(
    sources: list[str], outputs: list[str] = ()
) -> tuple[set[str], set[tuple[str, str]]]:
    """Non-trivial literals of the test lines, and their (input, output) pairs.

    ``sources`` (the task) are read generously; ``outputs`` (tool results, often whole
    files) only on lines that assert or report an expectation.
    """
    known: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    outputs = [o for o in outputs if _may_expect(o)]
    for source, pattern in [(s, TESTLIKE) for s in sources] + [(o, _EXPECTING) for o in outputs]:
        for line in source.splitlines():
            if len(line) > 2000 or not pattern.search(line):
                continue
            known |= literals_in(line)
            split = _SPLIT.search(line)
            if split:
                left, right = literals_in(line[: split.start()]), literals_in(line[split.end() :])
                pairs |= {(i, o) for i in left for o in right}
    return known - TRIVIAL, pairs


class Branches:
    """Literal branches of one piece of code: compared values, answers, (value, answer) pairs."""

    def __init__(self) -> None:
        self.compared: dict[str, int] = {}  # value -> first line index
        self.answers: set[str] = set()
        self.pairs: set[tuple[str, str]] = set()
        self.branch_lines = 0
        self.lines = 0

    def add(self, values: set[str], answer: str | None, line: int) -> None:
        for value in values:
            self.compared.setdefault(value, line)
            if answer is not None:
                self.pairs.add((value, answer))
        if answer is not None:
            self.answers.add(answer)
        self.branch_lines += 1

    @property
    def lookup_only(self) -> bool:
        """Three or more literal branches and little else: a table, not an algorithm."""
        return len(self.compared) >= 3 and self.branch_lines >= 0.45 * max(1, self.lines)


def branches_in_text(text: str) -> Branches:
    out = Branches()
    lines = text.splitlines()
    out.lines = sum(
        1 for line in lines if line.strip() and line.strip() not in ("}", "end", "else")
    )
    for index, line in enumerate(lines):
        if SKIP_LINE.match(line):
            continue
        values: set[str] = set()
        for match in list(CMP.finditer(line)) + list(RCMP.finditer(line)):
            values |= literals_in(match.group(1))
        if not values:
            continue
        answer = ANSWER.search(line)
        if answer is None and index + 1 < len(lines):
            answer = ANSWER.search(lines[index + 1])
            out.branch_lines += answer is not None
        got = literals_in(answer.group(1)) if answer else set()
        out.add(values, next(iter(got)) if len(got) == 1 else None, index)
    return out


def branches_in_python(tree: ast.Module) -> Branches:
    out = Branches()
    out.lines = sum(1 for n in nodes(tree) if isinstance(n, ast.stmt))
    for node, context in walk(tree):
        if isinstance(node, ast.Assert) or context.in_test:
            continue
        line = getattr(node, "lineno", 1) - 1
        if isinstance(node, ast.If | ast.IfExp):
            values = _compared(node.test)
            if not values:
                continue
            body = node.body[0] if isinstance(node, ast.If) and node.body else node.body
            value = body.value if isinstance(body, ast.Return) else body
            answer = literal(value) if isinstance(value, ast.expr) else ...
            out.add(values, None if answer is ... else norm_value(answer), line)
        elif isinstance(node, ast.match_case):
            value = literal(getattr(node.pattern, "value", None))
            first = node.body[0] if node.body else None
            answer = literal(first.value) if isinstance(first, ast.Return) else ...
            if value is not ...:
                out.add({norm_value(value)}, None if answer is ... else norm_value(answer), line)
    return out


def _compared(test: ast.expr) -> set[str]:
    values: set[str] = set()
    for node in nodes(test):
        if isinstance(node, ast.Compare) and any(
            isinstance(o, ast.Eq | ast.Is | ast.In) for o in node.ops
        ):
            for side in (node.left, *node.comparators):
                value = literal(side)
                if value is not ... and not isinstance(side, ast.Name):
                    items = (
                        value
                        if isinstance(value, tuple | set) and isinstance(node.ops[0], ast.In)
                        else [value]
                    )
                    values |= {norm_value(v) for v in items}
    return values


def table_hits(node: ast.Dict, known: set[str], pairs: set[tuple[str, str]]) -> int:
    """How many entries of a dict display map a test input to its expected output."""
    hits = 0
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        key, value = literal(key_node), literal(value_node)
        if key is ... or value is ...:
            continue
        k, v = norm_value(key), norm_value(value)
        parts = [norm_value(x) for x in key] if isinstance(key, tuple) else [k]
        paired = v not in TRIVIAL and any((p, v) in pairs for p in parts)
        if (k in known and v in known) or paired:
            hits += 1
    return hits
