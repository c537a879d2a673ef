"""Limits at the edge of ``judge-service serve``: request-head size and time, keep-alive.

uvicorn's httptools protocol parses requests (llhttp, in C): on an episode step it cost
about a third of what h11, uvicorn's pure-Python protocol, did (py-spy, ``bench/episodes.py``).
Neither bounds a request head by itself: httptools keeps every byte of a head until it is
complete, and h11's bound answers 400. What uvicorn lacks is added by the small subclass
below (why hand-written: uvicorn has no setting for either):

- a head over ``JS_MAX_HEADER_KB`` is answered 431 (RFC 6585) and the connection closed as
  soon as the bytes received for it pass the limit: a 200 MB header costs at most the limit
  plus one socket read;
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

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from judge_service.core.settings import Settings

log = logging.getLogger(__name__)


class EdgeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded request head (431) and a head timeout."""

    def __init__(
        self, *args: Any, header_timeout_s: float = 10.0, max_head_bytes: int, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.max_head_bytes = max_head_bytes
        self.head_timer: asyncio.TimerHandle | None = None
        self.awaiting_head = True  # no head, or part of one: the next request's
        self.head_bytes = 0  # received since the head being awaited began (one read more)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self.awaiting_head:  # a body: ``api.body`` bounds it
            super().data_received(data)
            return
        self.head_bytes += len(data)
        super().data_received(data)
        if self.awaiting_head and self.head_bytes > self.max_head_bytes:
            self._refuse_head()

    def on_headers_complete(self) -> None:
        self.awaiting_head = False
        self._disarm_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.awaiting_head, self.head_bytes = True, 0

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.awaiting_head and not self.transport.is_closing():
            self._arm_head_timer()  # the next request's head has the same time

    def _refuse_head(self) -> None:
        """431 with the service's JSON error, then close: the rest of the head is never read."""
        if self.transport.is_closing():
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
        head = [b"HTTP/1.1 431 Request Header Fields Too Large\r\n"]
        for name, value in self.server_state.default_headers:
            head.append(name + b": " + value + b"\r\n")
        head.append(b"content-type: application/json\r\nconnection: close\r\n")
        head.append(b"content-length: %d\r\n\r\n" % len(body))
        self.transport.write(b"".join(head) + body)
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
        if self.awaiting_head and not self.transport.is_closing():
            log.debug(
                "closing a connection that sent no request head in %ss", self.header_timeout_s
            )
            self.transport.close()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The edge limits as ``uvicorn.run`` keyword arguments. The protocol is a
    ``functools.partial`` of a module-level class, so ``--workers N`` can pickle it."""
    return {
        "http": functools.partial(
            EdgeProtocol,
            header_timeout_s=settings.header_timeout_s,
            max_head_bytes=settings.max_header_kb * 1024,
        ),
        "timeout_keep_alive": settings.keep_alive_s,
    }
