"""Path and query values holding control characters are refused before any route reads them.

Why: ids and names never hold one (``wire.Identifier`` refuses them in bodies), and
PostgreSQL cannot even compare a text value that holds NUL: the lookup would fail (a 500)
instead of answering "not found". One app-wide dependency covers every route, present and
future; it raises FastAPI's own validation error, so the app's one handler answers the 422
naming the parameter (``path.job_id``), as for any other invalid parameter.
"""

from __future__ import annotations

import re

from fastapi import Request
from fastapi.exceptions import RequestValidationError

from judge_service.wire import CONTROL_CHARACTERS

_CONTROL = re.compile(f"[{CONTROL_CHARACTERS}]")


async def plain_params(request: Request) -> None:
    """422 naming the first path or query parameter that holds a control character."""
    for where, items in (
        ("path", request.path_params.items()),
        ("query", request.query_params.multi_items()),
    ):
        for name, value in items:
            if isinstance(value, str) and _CONTROL.search(value):
                error = {
                    "loc": (where, name),
                    "msg": "control characters are not allowed",
                    "type": "control_character",
                }
                raise RequestValidationError([error])
