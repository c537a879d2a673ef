"""Prompts and verdict schemas of the ``llm`` judge.

Templates are Jinja files shipped in ``judge_service/templates``. The text under evaluation is
data: each piece sits inside fences whose boundary is a keyed hash of the content (secret, yet
stable, so the verdict cache still hits), and look-alike delimiters inside it are neutralised.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from functools import cache
from typing import Any

import jinja2
import pydantic_core

from judge_service.domain import Rubric, Sample

_KEY = secrets.token_bytes(32)  # per process: nobody outside can predict a fence boundary
_LOOKALIKES = re.compile(r"<{3,}|>{3,}|<\||\|>|</?s>|\[/?INST\]", re.IGNORECASE)


def _text(max_chars: int | None) -> dict[str, Any]:
    """A string; bounded for grammar-constrained local models, which otherwise may ramble
    until ``max_tokens`` and cut the JSON short (OpenAI's strict mode rejects ``maxLength``)."""
    return {"type": "string"} if max_chars is None else {"type": "string", "maxLength": max_chars}


def verdict_schema(text_max: int | None = None, levels: int | None = None) -> dict[str, Any]:
    """Pointwise verdict: a rationale, then a score that is a JSON number in [0, 1].

    ``levels`` adds an ``enum`` of evenly spaced scores: llama.cpp's grammar ignores
    ``minimum``/``maximum`` but honours ``enum``, so a local model cannot leave the range.
    """
    score: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
    if levels is not None and levels >= 2:
        score["enum"] = [round(i / (levels - 1), 4) for i in range(levels)]
    return {
        "type": "object",
        "properties": {"rationale": _text(text_max), "score": score},
        "required": ["rationale", "score"],
        "additionalProperties": False,
    }


@cache
def _templates() -> jinja2.Environment:
    """Templates found relative to the installed package, never the working directory."""
    loader = jinja2.PackageLoader("judge_service", "templates")
    # auto_reload off: templates ship with the package, so no stat() per render.
    return jinja2.Environment(
        loader=loader, undefined=jinja2.StrictUndefined, autoescape=False, auto_reload=False
    )


@cache
def template_digest(name: str) -> str:
    """Digest of a template's source: editing a template invalidates its cached verdicts."""
    source, _, _ = _templates().loader.get_source(_templates(), name)  # type: ignore[union-attr]
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def neutralise(text: str) -> str:
    """Defuse look-alike delimiters and chat-template tokens inside text under evaluation."""
    return _LOOKALIKES.sub(lambda m: "\u2039" * len(m.group()), text)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value):
        return Sample(id="_", prompt="", completion=value).transcript()
    return json.dumps(value, ensure_ascii=False)


def content(sample: Sample) -> dict[str, Any]:
    """What of a sample decides its verdict (its id and metadata do not)."""
    return {
        "prompt": sample.prompt,
        "completion": sample.completion,
        "reference": sample.reference,
        "context": sample.context,
    }


def rubric_schema(rubric: Rubric, text_max: int | None = None) -> dict[str, Any]:
    """Verdict schema of a rubric: one ``{reason, met: boolean}`` per criterion id."""
    item = {
        "type": "object",
        "properties": {"reason": _text(text_max), "met": {"type": "boolean"}},
        "required": ["reason", "met"],
        "additionalProperties": False,
    }
    ids = [criterion.id for criterion in rubric.criteria]
    criteria = {"type": "object", "properties": dict.fromkeys(ids, item), "required": ids}
    criteria["additionalProperties"] = False
    return {
        "type": "object",
        "properties": {"criteria": criteria, "rationale": _text(text_max)},
        "required": ["criteria", "rationale"],
        "additionalProperties": False,
    }


def rubric_score(rubric: Rubric, met: dict[str, bool]) -> float:
    """Weighted points met over the positive points; pitfalls met subtract; clipped to [0, 1]."""
    positive = sum(c.weight for c in rubric.criteria if c.weight > 0)
    gained = sum(c.weight for c in rubric.criteria if met.get(c.id))
    if positive <= 0:  # pitfalls only: start from full marks
        return max(0.0, min(1.0, 1.0 + gained / sum(-c.weight for c in rubric.criteria)))
    return max(0.0, min(1.0, gained / positive))


def group_schema(
    size: int, text_max: int | None = None, levels: int | None = None
) -> dict[str, Any]:
    """Relative verdict: one pointwise verdict per response, ``response_1`` to ``response_N``."""
    keys = [f"response_{i}" for i in range(1, size + 1)]
    return {
        "type": "object",
        "properties": dict.fromkeys(keys, verdict_schema(text_max, levels)),
        "required": keys,
        "additionalProperties": False,
    }


#: Rendered prompts, ``(template, fields as JSON, id(rubric)) -> (rubric, messages)``: the
#: judges of a panel that share a template ask about a sample with the same prompt, so it
#: is rendered once per sample, not once per judge (Jinja is most of a render's cost).
#: The rubric is held, so its id cannot be reused while the entry exists.
_RENDERED: dict[tuple[str, bytes, int], tuple[Rubric | None, list[dict[str, str]]]] = {}
_RENDERED_MAX = 4096


def render(
    template: str, fields: dict[str, Any], rubric: Rubric | None = None
) -> list[dict[str, str]]:
    """System and user messages, the data fenced under a boundary keyed on its content.

    Each call gets its own message dicts (a client may add to them); the text is made
    once per template, fields and rubric."""
    # pydantic-core (Rust) rather than json.dumps: once per sample; the judge builds its
    # fields in one fixed order, so the same content gives the same bytes
    blob = pydantic_core.to_json(fields)
    key = (template, blob, id(rubric))
    cached = _RENDERED.get(key)
    if cached is None or cached[0] is not rubric:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        cached = _RENDERED[key] = (rubric, _render(template, fields, blob, rubric))
    return [dict(message) for message in cached[1]]


def _render(
    template: str, fields: dict[str, Any], blob: bytes, rubric: Rubric | None
) -> list[dict[str, str]]:
    digest = hmac.new(_KEY, blob, "sha256")
    boundary = f"DATA-{digest.hexdigest()[:20]}"

    def fence(label: str, text: str) -> str:
        return f"<<<{boundary} BEGIN {label}>>>\n{neutralise(text)}\n<<<{boundary} END {label}>>>"

    user = f"Fence code: {boundary}\n\n" + _template(template).render(
        fence=fence, rubric=rubric, **fields
    )
    return [{"role": "system", "content": _system()}, {"role": "user", "content": user}]


@cache
def _template(name: str) -> jinja2.Template:
    """A compiled template (templates ship with the package and never change at run time)."""
    return _templates().get_template(name)


@cache
def _system() -> str:
    """The system message: the same for every sample (so servers can reuse its cached
    prefix), rendered once per process."""
    return _template("judge_system.jinja").render()
