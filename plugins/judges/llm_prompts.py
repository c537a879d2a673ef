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

    user = f"Fence code: {boundary}\n\n" + _fill(template, fields, rubric, fence)
    return [{"role": "system", "content": _system()}, {"role": "user", "content": user}]


#: A template rendered once per shape of its fields, as literal text and slots: a slot is
#: ``(fence label, field name)`` (label None: the field's text as is; name None: "").
Piece = str | tuple[str | None, str | None]
#: ``(template, shape, id(rubric)) -> (rubric, pieces or None)``; None: render with Jinja.
_SKELETONS: dict[tuple[str, tuple, int], tuple[Rubric | None, list[Piece] | None]] = {}
_SKELETONS_MAX = 1024
_SLOT = re.compile(r"\x01(\d+)\x01|\x00([^\x00\x01]*)\x00")


def _fill(template: str, fields: dict[str, Any], rubric: Rubric | None, fence: Any) -> str:
    """The template's text for these fields: its skeleton filled in, else Jinja's render.

    Why: Jinja's render (a new context, a call through it per fence) was ~25 µs of a
    judge call's ~0.5 ms of CPU. The skeleton is the template rendered once per shape of
    its fields (which are None, empty or text; how many context documents), with stand-ins
    for the texts; filling it is a join. It is used only when filling it gave exactly what
    Jinja rendered for the first sample of that shape, so a template that reads a text
    field other than whole (a filter, a length) keeps Jinja's render.
    """
    shaped = _shape(fields)
    if shaped is None:
        return _template(template).render(fence=fence, rubric=rubric, **fields)
    shape, texts = shaped
    key = (template, shape, id(rubric))
    entry = _SKELETONS.get(key)
    if entry is not None and entry[0] is rubric:
        pieces = entry[1]
        if pieces is None:
            return _template(template).render(fence=fence, rubric=rubric, **fields)
        return _join(pieces, texts, fence)
    rendered = _template(template).render(fence=fence, rubric=rubric, **fields)
    pieces = _skeleton(template, shape, rubric, set(texts))
    if pieces is not None and _join(pieces, texts, fence) != rendered:
        pieces = None  # the template does more with a field than print it
    if len(_SKELETONS) >= _SKELETONS_MAX:
        _SKELETONS.clear()
    _SKELETONS[key] = (rubric, pieces)
    return rendered


def _shape(fields: dict[str, Any]) -> tuple[tuple, dict[str, str]] | None:
    """``(shape, {name: text})``, or None when a field is not text (a string, None, or a
    list of strings). A text's name is its field's, or ``field.index`` in a list."""
    shape: list[tuple[str, Any]] = []
    texts: dict[str, str] = {}
    for key, value in fields.items():
        if value is None or value == "":
            shape.append((key, value))
        elif isinstance(value, str):
            shape.append((key, True))
            texts[key] = value
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            shape.append((key, tuple(bool(item) for item in value)))
            texts.update((f"{key}.{i}", item) for i, item in enumerate(value) if item)
        else:
            return None
    return tuple(shape), texts


def _stand_ins(shape: tuple) -> dict[str, Any]:
    """Fields of this shape with each text replaced by its name between NULs."""
    fields: dict[str, Any] = {}
    for key, kind in shape:
        if kind is True:
            fields[key] = f"\x00{key}\x00"
        elif isinstance(kind, tuple):
            fields[key] = [f"\x00{key}.{i}\x00" if some else "" for i, some in enumerate(kind)]
        else:
            fields[key] = kind  # None or ""
    return fields


def _skeleton(
    template: str, shape: tuple, rubric: Rubric | None, names: set[str]
) -> list[Piece] | None:
    """The template rendered with stand-ins, cut into literal text and slots (None when a
    fence holds anything but one whole field)."""
    fenced: list[tuple[str, str]] = []

    def mark(label: str, text: str) -> str:
        fenced.append((label, text))
        return f"\x01{len(fenced) - 1}\x01"

    out = _template(template).render(fence=mark, rubric=rubric, **_stand_ins(shape))
    pieces: list[Piece] = []
    start = 0
    for match in _SLOT.finditer(out):
        pieces.append(out[start : match.start()])
        if match.group(1) is not None:
            label, text = fenced[int(match.group(1))]
            name = text[1:-1] if text[:1] == "\x00" and text[-1:] == "\x00" else None
            if (name is None and text != "") or (name is not None and name not in names):
                return None
            pieces.append((label, name))
        elif match.group(2) in names:
            pieces.append((None, match.group(2)))
        else:
            return None
        start = match.end()
    pieces.append(out[start:])
    return pieces


def _join(pieces: list[Piece], texts: dict[str, str], fence: Any) -> str:
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        label, name = piece
        text = "" if name is None else texts[name]
        out.append(text if label is None else fence(label, text))
    return "".join(out)


@cache
def _template(name: str) -> jinja2.Template:
    """A compiled template (templates ship with the package and never change at run time)."""
    return _templates().get_template(name)


@cache
def _system() -> str:
    """The system message: the same for every sample (so servers can reuse its cached
    prefix), rendered once per process."""
    return _template("judge_system.jinja").render()
