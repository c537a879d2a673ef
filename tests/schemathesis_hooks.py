"""Schemathesis hooks for ``tests/service/test_fuzz_api.py`` (through ``SCHEMATHESIS_HOOKS``).

The forge uploads take JSONL (``application/x-ndjson``), which schemathesis cannot send
by itself: generated values go out as one JSON document per line.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(context: Any, value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    values = value if isinstance(value, list) else [value]
    return "".join(json.dumps(v) + "\n" for v in values).encode("utf-8", "surrogatepass")
