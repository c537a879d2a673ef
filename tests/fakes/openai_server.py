"""An OpenAI-compatible chat-completions server for tests and benchmarks, with injectable faults.

The code under test reaches it like any real server (``api_base`` or ``OPENAI_API_BASE``) and
does not know it is fake. Behaviour is chosen per model name, either configured through
``POST /_control/models/{model}`` (or :meth:`FakeOpenAIServer.configure`) or read from the
model name itself: ``always-500``, ``rate-limit``, ``hang``, ``prose``, ``garbage``, ``slow-50``
(milliseconds). Everything else answers normally, filling whatever JSON schema the request
sends. ``replies`` script answers per prompt: the first :class:`Reply` whose ``match`` occurs in
the request's messages answers it, with its ``contents`` (or ``scores``) in turn.
Run alone with ``python -m tests.fakes.openai_server --port 8011 --latency-ms 50``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import socket
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator
from typing import Any, Literal

import pydantic_core
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

Fault = Literal["none", "500", "429", "hang", "prose", "garbage"]
BODIES_KEPT = 4096
_NAME_FAULTS: dict[str, Fault] = {
    "always-500": "500",
    "rate-limit": "429",
    "hang": "hang",
    "prose": "prose",
    "garbage": "garbage",
}


class Reply(BaseModel):
    """A scripted answer for requests whose messages contain ``match``: the next of
    ``contents`` (JSON values, cycled), else the schema filled with the next of ``scores``."""

    match: str
    contents: list[Any] | None = None
    scores: list[float] | None = None


class Behaviour(BaseModel):
    """How the server answers one model. ``times`` limits the fault to the first N requests."""

    fault: Fault = "none"
    times: int | None = None
    latency_s: float = 0.0
    retry_after: int = 1
    score: float = 0.8
    scores: list[float] | None = None  # numbers in answer order, e.g. to fake position bias
    boolean: bool = True
    replies: list[Reply] = []


def fill(
    schema: dict[str, Any], behaviour: Behaviour, numbers: Iterator[float] | None = None
) -> Any:
    """A value valid under ``schema``: numbers from ``numbers`` (default: ``behaviour.scores``
    in turn, else its ``score``), booleans its flag, strings a stock sentence."""
    if numbers is None:
        numbers = itertools.cycle(behaviour.scores or [behaviour.score])
    if "enum" in schema:
        options = schema["enum"]
        if all(isinstance(o, int | float) and not isinstance(o, bool) for o in options):
            wanted = next(numbers)
            return min(options, key=lambda option: abs(option - wanted))
        return options[0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {key: fill(sub, behaviour, numbers) for key, sub in props.items()}
    if kind == "array":
        count = max(1, schema.get("minItems", 1))
        return [fill(schema.get("items", {}), behaviour, numbers) for _ in range(count)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", float("-inf"))
        high = schema.get("maximum", float("inf"))
        value = min(max(next(numbers), low), high)
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return behaviour.boolean
    if kind == "null":
        return None
    return "Looks correct and complete."


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of a request, as ``json_schema`` or as llama.cpp's ``json_object`` form."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") == "json_object":
        return fmt.get("schema") or {"type": "object", "properties": {}}
    return None


class FakeOpenAIServer:
    """The fake server: ``start()`` serves it on a free 127.0.0.1 port in a background thread."""

    def __init__(self, *, latency_s: float = 0.0, port: int = 0) -> None:
        self.default = Behaviour(latency_s=latency_s)
        self.behaviours: dict[str, Behaviour] = {}
        self._derived: dict[str, Behaviour] = {}  # behaviours read from model names, per name
        self.requests: Counter[str] = Counter()
        #: The latest request bodies, oldest first. Bounded: a benchmark's fake serves tens of
        #: thousands of calls, and every body kept is a dozen objects its full collections scan.
        self.bodies: deque[dict[str, Any]] = deque(maxlen=BODIES_KEPT)
        #: The ``Authorization`` headers of the latest chat requests, oldest first (keys reach
        #: the server; tests check that they reach nothing else).
        self.authorizations: deque[str] = deque(maxlen=BODIES_KEPT)
        self._numbers: dict[str, Iterator[float]] = {}  # per model, continued across requests
        self._turns: Counter[str] = Counter()  # per scripted reply, which of its contents is next
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()  # per model, as the client limits it
        self.in_flight_total = 0
        self.max_in_flight_total = 0  # every model together, as a per-server limit bounds it
        self.port = port or free_port()
        self.app = self._build_app()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._closing = False

    @property
    def url(self) -> str:
        """Base URL to use as ``api_base`` / ``OPENAI_API_BASE``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def configure(self, model: str, **fields: Any) -> None:
        """Set the behaviour of ``model`` (the name as sent, without the ``openai/`` prefix)."""
        self.behaviours[model] = Behaviour(**fields)
        self._forget(model)

    def _forget(self, model: str) -> None:
        self._derived.clear()
        for store in (self._numbers, self._turns):
            for key in [k for k in store if k == model or k.startswith(f"{model}\x00")]:
                store.pop(key, None)

    def reset(self) -> None:
        self.behaviours.clear()
        self._derived.clear()
        self._numbers.clear()
        self._turns.clear()
        self.requests.clear()
        self.bodies.clear()
        self.authorizations.clear()
        self.max_in_flight.clear()
        self.max_in_flight_total = 0

    def behaviour(self, model: str) -> Behaviour:
        if model in self.behaviours:
            return self.behaviours[model]
        derived = self._derived.get(model)
        if derived is None:
            derived = self._derived[model] = self._from_name(model)
        return derived

    def _from_name(self, model: str) -> Behaviour:
        """The default behaviour with the faults and latency the model's name asks for."""
        behaviour = self.default.model_copy()
        for token, fault in _NAME_FAULTS.items():
            if token in model:
                behaviour.fault = fault
        if "slow-" in model:
            digits = model.split("slow-", 1)[1].split("-")[0]
            behaviour.latency_s = int(digits) / 1000 if digits.isdigit() else 0.05
        return behaviour

    async def _complete(self, body: dict[str, Any]) -> Response:
        model = str(body.get("model", ""))
        self.in_flight[model] += 1
        self.max_in_flight[model] = max(self.max_in_flight[model], self.in_flight[model])
        self.in_flight_total += 1
        self.max_in_flight_total = max(self.max_in_flight_total, self.in_flight_total)
        try:
            return await self._answer(body)
        finally:
            self.in_flight[model] -= 1
            self.in_flight_total -= 1

    async def _answer(self, body: dict[str, Any]) -> Response:
        model = str(body.get("model", ""))
        self.requests[model] += 1
        self.bodies.append(body)
        behaviour = self.behaviour(model)
        if behaviour.latency_s:
            await asyncio.sleep(behaviour.latency_s)
        fault = behaviour.fault
        if behaviour.times is not None and self.requests[model] > behaviour.times:
            fault = "none"
        if fault == "hang":  # until the caller gives up, or the server stops
            while not self._closing:
                await asyncio.sleep(0.05)
            return JSONResponse({"error": {"message": "shutting down"}}, status_code=503)
        if fault == "500":
            return JSONResponse({"error": {"message": "injected failure"}}, status_code=500)
        if fault == "429":
            headers = {"retry-after": str(behaviour.retry_after)}
            error = {"error": {"message": "rate limited", "type": "rate_limit"}}
            return JSONResponse(error, status_code=429, headers=headers)
        schema = request_schema(body)
        scripted = self._scripted(model, behaviour, body, schema) if fault == "none" else None
        if scripted is not None:
            content = scripted
        elif fault == "prose" or (schema is None and fault == "none"):
            content = "I think this answer is quite good, probably around eight out of ten."
        elif fault == "garbage":
            content = '{"score": "very high", "rationale": '
        else:
            numbers = self._numbers.setdefault(
                model, itertools.cycle(behaviour.scores or [behaviour.score])
            )
            content = json.dumps(fill(schema or {}, behaviour, numbers))
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        answer = pydantic_core.to_json(_completion(model, content, prompt_tokens))
        return Response(answer, media_type="application/json")

    def _scripted(
        self, model: str, behaviour: Behaviour, body: dict[str, Any], schema: dict | None
    ) -> str | None:
        """The content of the first matching :class:`Reply`, or None."""
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        for index, reply in enumerate(behaviour.replies):
            if reply.match not in text:
                continue
            key = f"{model}\x00reply{index}"
            if reply.contents:
                turn = self._turns[key]
                self._turns[key] += 1
                value = reply.contents[turn % len(reply.contents)]
                return value if isinstance(value, str) else json.dumps(value)
            numbers = self._numbers.setdefault(
                key, itertools.cycle(reply.scores or behaviour.scores or [behaviour.score])
            )
            return json.dumps(fill(schema or {}, behaviour, numbers))
        return None

    def _build_app(self) -> FastChat:
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": "fake", "object": "model"}]}

        @app.post("/_control/models/{model:path}")
        async def control(model: str, behaviour: Behaviour) -> dict[str, str]:
            self.behaviours[model] = behaviour
            self._forget(model)
            return {"ok": model}

        @app.post("/_control/reset")
        async def reset() -> dict[str, bool]:
            self.reset()
            return {"ok": True}

        @app.get("/_control/stats")
        async def stats() -> dict[str, Any]:
            return {
                "requests": dict(self.requests),
                "total": self.total_requests,
                "max_in_flight": dict(self.max_in_flight),
            }

        return FastChat(self, app)

    def start(self) -> FakeOpenAIServer:
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=1,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True, name="fake-openai")
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._closing = True
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)


class FastChat:
    """The ASGI app: chat completions go straight to the fake's handler, everything else
    (models, the control routes) to FastAPI.

    Why not a FastAPI route for chat: the fake stands in for a model server on other
    hardware, yet in the benchmarks it shares this machine's two cores with the service.
    Routing, middleware and request objects cost it ~0.2 ms a request, enough to delay the
    replies of a round of 64 calls by several ms. A raising handler is a 500, as before.
    """

    def __init__(self, server: FakeOpenAIServer, app: FastAPI) -> None:
        self.server = server
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in _CHAT:
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = dict(scope.get("headers") or [])
        self.server.authorizations.append(headers.get(b"authorization", b"").decode("latin-1"))
        response = await self.server._complete(pydantic_core.from_json(body))
        await response(scope, receive, send)


_CHAT = frozenset({"/v1/chat/completions", "/chat/completions"})


def _completion(model: str, content: str, prompt_tokens: int) -> dict[str, Any]:
    completion_tokens = len(content.split())
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeOpenAIServer(latency_s=args.latency_ms / 1000, port=args.port)
    # Its start-up heap (FastAPI, pydantic, uvicorn) out of the collector's reach: a full
    # collection would rescan it, stalling a round of replies in a benchmark.
    gc.collect()
    gc.freeze()
    print(f"fake OpenAI server on {server.url}", flush=True)
    uvicorn.run(server.app, host="127.0.0.1", port=server.port, log_level="warning")


if __name__ == "__main__":
    main()
