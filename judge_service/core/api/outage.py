"""The API's one answer to a database outage: 503 ``database_unavailable`` with
``Retry-After`` (a readable page for the HTML pages), wherever the failing query ran: a
dependency, a route, a thread. Other database errors are bugs and stay 500."""

from __future__ import annotations

import logging
import time

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError

from judge_service.core.api.web.pages import render
from judge_service.core.errors import DatabaseUnavailable
from judge_service.core.storage.outage import find_outage

log = logging.getLogger(__name__)

#: At most one log line per this many seconds while the outage lasts (every request fails).
LOG_EVERY_S = 10.0
_last_logged = 0.0


def _is_page(request: Request) -> bool:
    """Whether the route that failed is one of the HTML pages (review, runs, sign-in): every
    page route declares ``response_class=HTMLResponse``, wherever its module lives."""
    return getattr(request.scope.get("route"), "response_class", None) is HTMLResponse


def _log(request: Request, reason: str) -> None:
    global _last_logged
    now = time.monotonic()
    if now - _last_logged >= LOG_EVERY_S:
        _last_logged = now
        log.warning(
            "%s %s answered 503: the database is unavailable (%s)",
            request.method,
            request.url.path,
            reason,
        )


async def database_error(request: Request, exc: SQLAlchemyError) -> Response:
    """503 for an outage; anything else is re-raised to the 500 handler, traceback logged."""
    outage = find_outage(exc)
    if outage is None:
        raise exc
    _log(request, outage.reason)
    error = DatabaseUnavailable(
        f"the database is unavailable ({outage.reason}); try again later",
        detail={"reason": outage.reason},
    )
    if _is_page(request):
        page = render(
            "unavailable.html",
            status=error.status_code,
            reason=outage.reason,
            retry_after_s=error.retry_after_s,
        )
        page.headers.update(error.headers())
        return page
    return JSONResponse(error.to_json(), status_code=error.status_code, headers=error.headers())
