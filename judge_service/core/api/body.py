"""Raw request-body checks that run before FastAPI parses anything.

Why a hand-written ASGI middleware: the status codes the contract asks for
(413 for size, 408 for a body too slow to come, 400 for bad UTF-8, unpaired
surrogates, bad or too deeply nested JSON) must be decided on the raw bytes, before
routing and model validation. The JSON it
parsed is handed on, so the scoring routes (:class:`ParsedBodyRoute`) don't
parse it twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import pydantic_core
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge_service.core import json_depth
from judge_service.core.errors import (
    InvalidEncoding,
    JSONTooDeep,
    JudgeServiceError,
    MalformedJSON,
    PayloadTooLarge,
    RequestTimeout,
    UnsupportedMediaType,
)

#: Routes whose bodies are always JSON.
JSON_PATHS = ("/v1/", "/get_reward")
#: Upload routes under ``/v1/`` whose bodies are JSONL: their route names the bad line.
JSONL_PATHS = ("/v1/forge/traces", "/v1/forge/documents")


#: Where the guard leaves the body it parsed, for :class:`ParsedBodyRoute` to reuse.
PARSED_BODY = "judge_service.parsed_body"


def _too_deep() -> JSONTooDeep:
    limit = json_depth.MAX_DEPTH
    return JSONTooDeep(
        f"the body nests arrays and objects deeper than {limit} levels",
        detail={"max_depth": limit},
    )


def _within_depth(body: bytes, parsed: Any) -> Any:
    """``parsed``, once it is known to nest at most ``MAX_DEPTH`` levels (400 otherwise).

    A body with fewer brackets than the limit cannot nest deeper: counting them is
    a few microseconds, so only bodies with many containers are walked."""
    if body.count(b"[") + body.count(b"{") > json_depth.MAX_DEPTH:
        try:
            json_depth.check(parsed)
        except json_depth.TooDeep:
            raise _too_deep() from None
    return parsed


def _check_json(body: bytes) -> Any:
    """The parsed body; 400 when it is not UTF-8 JSON (or holds a lone surrogate), or
    nests deeper than ``json_depth.MAX_DEPTH``.

    pydantic-core's parser goes first: it takes half the time of ``json.loads`` on a
    GRPO step's ~50 KB, and refuses invalid UTF-8 and lone surrogate escapes by itself.
    Only a body it refuses goes through ``json``, to say exactly what is wrong.
    """
    try:
        return _within_depth(body, pydantic_core.from_json(body))
    except ValueError as exc:
        if "recursion limit" in str(exc):  # pydantic-core stops at 200 levels by itself
            raise _too_deep() from None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidEncoding(
            f"the body is not valid UTF-8 (byte {exc.start})", detail={"position": exc.start}
        ) from exc
    try:
        parsed = json.loads(text)
    except RecursionError:  # a body nested ~1,000 levels, invalid besides
        raise _too_deep() from None
    except json.JSONDecodeError as exc:
        raise MalformedJSON(
            f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            detail={"line": exc.lineno, "column": exc.colno},
        ) from exc
    _within_depth(body, parsed)
    if b"\\ud" not in body.lower():
        return parsed  # no surrogate escape at all: the common case, and a cheap test
    try:  # escapes like "\ud800" decode to lone surrogates, which no UTF-8 text can hold
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidEncoding("the body contains an unpaired UTF-16 surrogate escape") from exc
    return parsed


async def _send_error(send: Send, error: JudgeServiceError, *, close: bool = False) -> None:
    """The error as a JSON answer; ``close`` asks the server to close the connection
    after it (a body left half-read cannot be skipped to reach the next request)."""
    payload = json.dumps(error.to_json()).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class _Disconnected(Exception):
    """The client went away before its body was in."""


class BodyGuard:
    """Rejects bodies over the size limit (413), bodies not in within ``timeout_s`` (408),
    and JSON bodies that are not UTF-8 JSON or nest too deep (400)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, timeout_s: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"the body is larger than {self.max_bytes} bytes (JS_MAX_BODY_MB)",
            detail={"max_bytes": self.max_bytes},
        )

    async def _read(self, receive: Receive) -> bytes:
        """The whole body; 413 past the size limit, :class:`_Disconnected` if the client left."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _send_error(send, self._too_large())
            return
        try:
            async with asyncio.timeout(self.timeout_s):
                body = await self._read(receive)
        except _Disconnected:
            return
        except PayloadTooLarge as error:
            await _send_error(send, error)
            return
        except TimeoutError:
            late = RequestTimeout(
                f"the body was not received within {self.timeout_s:g} s (JS_BODY_TIMEOUT_S)",
                detail={"timeout_s": self.timeout_s},
            )
            await _send_error(send, late, close=True)
            return
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        is_json = content_type == b"application/json" or content_type.endswith(b"+json")
        if scope["path"] in JSONL_PATHS:
            await self.app(scope, _replay(body, receive), send)
            return
        if scope["path"].startswith(JSON_PATHS) and not is_json and (body or content_type):
            # Only JSON types: text/plain, form and multipart bodies are what another site's
            # page can post without a CORS preflight, so they are never read as JSON.
            await _send_error(send, _not_json(content_type))
            return
        if body and is_json:
            try:
                scope[PARSED_BODY] = _check_json(body)
            except JudgeServiceError as error:
                await _send_error(send, error)
                return
        await self.app(scope, _replay(body, receive), send)


def _not_json(content_type: bytes) -> UnsupportedMediaType:
    declared = content_type.decode("latin-1") or "none"
    return UnsupportedMediaType(
        f"content-type must be application/json (or a +json type), not {declared}",
        detail={
            "content_type": content_type.decode("latin-1") or None,
            "accepted": ["application/json", "*/*+json"],
        },
    )


def _replay(body: bytes, receive: Receive) -> Any:
    """A ``receive`` that hands the buffered body over once, then defers to the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class ParsedBodyRequest(Request):
    """A request whose ``json()`` is the body the guard already parsed, when it did."""

    async def json(self) -> Any:
        if PARSED_BODY in self.scope:
            return self.scope[PARSED_BODY]
        return await super().json()


class ParsedBodyRoute(APIRoute):
    """A route that validates the body :class:`BodyGuard` parsed instead of parsing it
    again (FastAPI's documented way to change the request class). A GRPO step's body
    is ~50 KB of JSON: the second ``json.loads`` cost ~0.5 ms of every step."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(ParsedBodyRequest(request.scope, request.receive))

        return handle
