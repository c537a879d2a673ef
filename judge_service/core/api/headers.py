"""Security headers on every answer: ``nosniff`` everywhere, and on HTML pages a
Content-Security-Policy, ``X-Frame-Options: DENY`` and ``Referrer-Policy``.

Why a raw ASGI middleware: it only edits the start message's headers, so the scoring
routes pay no extra task or body copy (Starlette's ``BaseHTTPMiddleware`` would).
A page that sets its own policy (``/docs``, ``/redoc``) keeps it.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The review and run pages: no scripts at all today (``'self'`` would allow a same-origin
#: file), inline ``<style>`` and ``style=`` (the run page is also written to a standalone
#: file by ``judge-service report``, so its CSS is inline), inline SVG plots, forms that
#: post only back here, and no framing.
PAGE_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class SecurityHeaders:
    """Adds the headers to each HTTP answer, leaving any the route set itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                if headers.get("content-type", "").startswith("text/html"):
                    for name, value in PAGE_HEADERS.items():
                        headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
