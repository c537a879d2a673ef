"""Final-answer extraction and normalisation shared by the deterministic judges."""

from __future__ import annotations

import re
import string
import unicodedata

_BOXED = re.compile(r"\\boxed\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_MARKERS = re.compile(
    r"\b(?:final answer|the answer is|answer)\b\s*(?:is)?\s*[:=]?\s*(.+)", re.IGNORECASE
)
_HASHES = re.compile(r"####\s*(.+)")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def final_answer(text: str) -> str:
    """The answer a completion commits to: ``\\boxed{}``, ``#### x``, "answer: x", or last line."""
    text = text.strip()
    if not text:
        return ""
    for pattern in (_BOXED, _HASHES):
        matches = pattern.findall(text)
        if matches:
            return matches[-1].strip()
    lines = [line for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        match = _MARKERS.search(line)
        if match:
            return match.group(1).strip()
    return lines[-1].strip()


def normalise(text: str) -> str:
    """Case, punctuation, articles and spacing removed (accents kept): 'The Paris.' -> 'paris'."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if ch not in string.punctuation or ch in "-.")
    text = text.strip(" .")
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def last_number(text: str) -> float | None:
    """The last number in ``text`` ("1,234.5" -> 1234.5), or None."""
    matches = _NUMBER.findall(text)
    if not matches:
        return None
    return float(matches[-1].replace(",", ""))
