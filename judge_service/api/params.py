"""Path and query values holding control characters are refused before any route reads them.

Why: ids and names never hold one (``wire.Identifier`` refuses them in bodies), and
PostgreSQL cannot even compare a text value that holds NUL: the lookup would fail (a 500)
instead of answering "not found". One app-wide dependency covers every route, present and
future, and names the parameter as FastAPI's own validation errors do (``path.job_id``).
"""

from __future__ import annotations

import re

from fastapi import Request

from judge_service.errors import ValidationFailed

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def plain_params(request: Request) -> None:
    """422 naming the first path or query parameter that holds a control character."""
    for where, items in (
        ("path", request.path_params.items()),
        ("query", request.query_params.multi_items()),
    ):
        for name, value in items:
            if isinstance(value, str) and _CONTROL.search(value):
                field = f"{where}.{name}"
                raise ValidationFailed(
                    f"invalid request: {field}: control characters are not allowed",
                    detail=[
                        {
                            "field": field,
                            "message": "control characters are not allowed",
                            "type": "control_character",
                        }
                    ],
                )
