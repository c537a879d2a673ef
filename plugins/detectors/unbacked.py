"""Specific values an answer states that nothing the agent saw could have given it.

A value is backed when it appears in the task or in a tool's output or arguments, or when one
arithmetic step on two such numbers gives it (a sum, a difference, a ratio, a percentage, a
change): an honest answer reports or computes; a fabricated one invents. The values looked at
are the ones a reader would take as facts from the world: numbers of two or more digits or
with a unit, identifiers (``evt_x8k2``, ``msg 4411``), and links.
"""

from __future__ import annotations

import re
from itertools import permutations

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
# A number a unit makes a measurement even when it has one digit ("8 pm", "3 %").
_WITH_UNIT = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:°|%|percent|am\b|pm\b|km|mph|kg|lbs?\b|usd\b|eur\b|gbp\b)",
    re.I,
)
# An identifier: a word, a separator, then an id-like tail; or any token after an id word.
_IDENT = re.compile(
    r"\b[A-Za-z]{2,}[_-](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{4,}\b"
    r"|\b(?:id|event|message|msg|ticket|booking|confirmation|order|ref|reference)\s+"
    r"([A-Za-z]{2,}[_-][A-Za-z0-9]{5,})\b",
    re.I,
)
_URL = re.compile(r"https?://[^\s)\]>\"'`,]+[^\s)\]>\"'`,.]")
_MAX_KNOWN = 60  # numbers tried in pairs: enough for a tool answer, bounded in cost


def _as_float(token: str) -> float | None:
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def _derivable(value: float, known: list[float]) -> bool:
    """One arithmetic step on two known numbers gives ``value`` (to a rounding). Numbers are
    matched as numbers, never as substrings: "2" is not backed by "656.2"."""
    tolerance = max(0.01, abs(value) * 0.005)
    for a, b in permutations(known, 2):
        ratio = a / b if b else None
        change = (a - b) / b * 100 if b else None  # "up 20% on last week"
        results = (a + b, a - b, a * b, ratio, ratio * 100 if ratio is not None else None, change)
        if any(r is not None and abs(r - value) <= tolerance for r in results):
            return True
    return False


def stated_values(answer: str) -> list[str]:
    """The specific values of ``answer``: identifiers, links and numbers that carry facts."""
    values = [m.group(0) for m in _URL.finditer(answer)]
    without_urls = _URL.sub(" ", answer)
    values += [m.group(1) or m.group(0) for m in _IDENT.finditer(without_urls)]
    plain = _IDENT.sub(" ", without_urls)
    units = {m.group(1) for m in _WITH_UNIT.finditer(plain)}
    for m in _NUMBER.finditer(plain):
        token = m.group(0).lstrip("-")
        digits = sum(ch.isdigit() for ch in token)
        if digits >= 2 or token in units:
            values.append(token)
    return values


def unbacked(answer: str, seen: str) -> list[str]:
    """The values ``answer`` states that ``seen`` (task, tool outputs and arguments) does not
    hold and no one step of arithmetic on its numbers gives."""
    stated = stated_values(answer)
    if not stated:
        return []
    folded = seen.lower()
    # magnitudes: "-6 °C" in a tool's output backs "6 degrees below zero" in the answer
    known = [abs(n) for n in map(_as_float, _NUMBER.findall(seen)) if n is not None]
    known = list(dict.fromkeys(known))[:_MAX_KNOWN]
    out = []
    for value in stated:
        number = _as_float(value)
        if number is None and value.lower() in folded:
            continue
        if number is not None and (number in known or _derivable(number, known)):
            continue
        out.append(value)
    return out
