"""Limits at the edge of ``judge-service serve``: request-head size and time, keep-alive.

uvicorn's h11 protocol is used because h11 bounds what it buffers before a request's
head is complete (``h11_max_incomplete_event_size``): a 200 MB header costs at most
the limit plus one socket read, where uvicorn's default httptools parser keeps
everything. What uvicorn lacks is added by the small subclass below (why hand-written:
uvicorn has no setting for either):

- the answer to an oversized head is 431, not uvicorn's generic 400;
- a client has ``JS_HEADER_TIMEOUT_S`` to send a whole request head, from connecting or
  from its previous answer, so a slow or silent client cannot hold a connection.

Body read time (408) and answer time (504) are ASGI middleware (``api.body``,
``api.deadline``): they apply to the app whatever server runs it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from judge_service.core.settings import Settings

log = logging.getLogger(__name__)


class EdgeProtocol(H11Protocol):
    """uvicorn's h11 protocol with a 431 for an oversized head and a head timeout."""

    def __init__(
        self, *args: Any, header_timeout_s: float = 10.0, max_head_bytes: int, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.max_head_bytes = max_head_bytes
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is in (or the connection failed)
            self._disarm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_timer()  # the next request's head has the same time

    def send_400_response(self, msg: str) -> None:
        """uvicorn answers every protocol error 400; h11's "buffer too long" is a head over
        the limit, which HTTP answers 431 (RFC 6585)."""
        if len(self.conn.trailing_data[0]) <= self.max_head_bytes:
            super().send_400_response(msg)
            return
        body = json.dumps(
            {
                "error": {
                    "code": "headers_too_large",
                    "message": f"the request head (request line and headers) is larger than "
                    f"{self.max_head_bytes} bytes (JS_MAX_HEADER_KB)",
                    "detail": {"max_bytes": self.max_head_bytes},
                }
            }
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (
            h11.Response(
                status_code=431, headers=headers, reason=b"Request Header Fields Too Large"
            ),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self.head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.debug(
                "closing a connection that sent no request head in %ss", self.header_timeout_s
            )
            self.transport.close()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The edge limits as ``uvicorn.run`` keyword arguments. The protocol is a
    ``functools.partial`` of a module-level class, so ``--workers N`` can pickle it."""
    max_head = settings.max_header_kb * 1024
    return {
        "http": functools.partial(
            EdgeProtocol, header_timeout_s=settings.header_timeout_s, max_head_bytes=max_head
        ),
        "h11_max_incomplete_event_size": max_head,
        "timeout_keep_alive": settings.keep_alive_s,
    }
