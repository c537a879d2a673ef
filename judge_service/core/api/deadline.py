"""A time limit on answering any one request (``JS_REQUEST_TIMEOUT_S``): then 504.

Why: every wait in the service has its own bound (batch deadlines, database and broker
timeouts), but a request stuck anywhere else would hold its connection and its
client forever. Why hand-written: uvicorn has no such setting, and Starlette none.
"""

from __future__ import annotations

import asyncio
import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge_service.core.errors import AnswerTimeout

log = logging.getLogger(__name__)


class RequestDeadline:
    """Cancels a request not answered within ``timeout_s``: 504 if nothing was sent yet,
    else the connection is closed (a half-sent answer cannot be finished)."""

    def __init__(self, app: ASGIApp, *, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            async with asyncio.timeout(self.timeout_s):
                await self.app(scope, receive, tracking_send)
        except TimeoutError:
            log.warning(
                "%s %s not answered within %ss", scope["method"], scope["path"], self.timeout_s
            )
            if started:
                raise
            error = AnswerTimeout(
                f"no answer within {self.timeout_s:g} s (JS_REQUEST_TIMEOUT_S)",
                detail={"timeout_s": self.timeout_s},
            )
            payload = json.dumps(error.to_json()).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": error.status_code,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(payload)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": payload})
