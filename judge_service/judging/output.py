"""Structured output for ``judging.client``: the ``response_format`` each backend takes,
and the check that a reply is JSON matching the schema.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal

import jsonschema_rs

ResponseFormatKind = Literal["json_schema", "json_object"]
_FENCED_JSON = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
#: Raw newlines in strings are accepted (small models write them). One decoder for every
#: reply: ``json.loads(text, strict=False)`` builds a new one on each call.
_DECODER = json.JSONDecoder(strict=False)


def response_format(kind: ResponseFormatKind, schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The ``response_format`` a backend accepts.

    llama.cpp's server answers HTTP 500 to ``json_schema`` and wants ``json_object`` with a
    ``schema`` (which it turns into a grammar); vLLM and OpenAI take ``json_schema``.
    """
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema_rs.Validator:
    """A compiled validator per schema: building one on every reply costs more than the check.

    jsonschema-rs (Rust): ~1 µs a verdict, against ~100 µs for the pure-Python
    ``jsonschema``, once per judge call (``bench/profile_batch.py``)."""
    return jsonschema_rs.validator_for(json.loads(schema_json))


#: ``id(schema) -> (schema, validator)``: a judge that passes the same schema object on
#: every call skips writing it out as the key. The schema is held, so its id
#: cannot be reused by another object while the entry exists.
_BY_ID: dict[int, tuple[dict[str, Any], jsonschema_rs.Validator]] = {}
_BY_ID_MAX = 1024


def _validator_of(schema: dict[str, Any]) -> jsonschema_rs.Validator:
    entry = _BY_ID.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    validator = _validator(json.dumps(schema, sort_keys=True))
    if len(_BY_ID) >= _BY_ID_MAX:
        _BY_ID.clear()
    _BY_ID[id(schema)] = (schema, validator)
    return validator


def parse_reply(text: str | None, schema: dict[str, Any]) -> dict[str, Any]:
    """The reply as a dict valid under ``schema``; raises ValueError saying what is wrong."""
    if not text or not text.strip():
        raise ValueError("the reply was empty")
    fenced = _FENCED_JSON.match(text)
    try:
        value = _DECODER.decode(fenced.group(1) if fenced else text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not JSON ({exc.msg} at char {exc.pos})") from exc
    try:
        _validator_of(schema).validate(value)
    except jsonschema_rs.ValidationError as exc:
        where = "/".join(str(p) for p in exc.instance_path) or "the top level"
        raise ValueError(f"the JSON does not match the schema at {where}: {exc.message}") from exc
    return value
