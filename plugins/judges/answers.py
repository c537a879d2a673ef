"""Final-answer extraction shared by the deterministic judges."""

from __future__ import annotations

import re

_BOXED = re.compile(r"\\boxed\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_MARKERS = re.compile(
    r"\b(?:final answer|the answer is|answer)\b\s*(?:is)?\s*[:=]?\s*(.+)", re.IGNORECASE
)
_HASHES = re.compile(r"####\s*(.+)")
_BOLD = re.compile(r"\*\*([^*\n]+?)\*\*|__([^_\n]+?)__")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")


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


def bold_answer(text: str) -> str | None:
    """The one ``**bold**`` (or ``__bold__``) span of ``text``; None when it has none or several."""
    spans = _BOLD.findall(text)
    return "".join(spans[0]).strip() if len(spans) == 1 else None


def last_sentence(text: str) -> str:
    """The last sentence of ``text`` ("I checked. It is Paris." -> "It is Paris.")."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    return sentences[-1].strip() if sentences else ""


def last_number(text: str) -> float | None:
    """The last number in ``text`` ("1,234.5" -> 1234.5), or None."""
    matches = _NUMBER.findall(text)
    if not matches:
        return None
    return float(matches[-1].replace(",", ""))
