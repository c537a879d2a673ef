"""The lean transport of ``judging.client``: one HTTP POST per call to an OpenAI-compatible
``/chat/completions`` (OpenAI, vLLM, SGLang, llama.cpp, TGI), without litellm.

litellm costs ~3 ms of CPU per call (request mapping, response objects, logging hooks, cost
lookup); a judge call needs none of it. This module sends the JSON body as bytes through one
pooled ``aiohttp`` session per event loop and base URL, and reads back only the text and the
token counts. Retries, limits, the re-ask and the cache stay in ``ModelClient``: this module
makes one attempt and raises :class:`APIStatusError` or :class:`APIConnectionError` when the
attempt fails, which ``ModelClient`` classifies like litellm's errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import pydantic_core

from judge_service.judging.client_cache import LoopLocal, loop_local

OPENAI_URL = "https://api.openai.com/v1"
#: OpenAI's reasoning models refuse ``max_tokens`` and want ``max_completion_tokens``.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


class APIStatusError(Exception):
    """The endpoint answered with an HTTP error status (``status_code``, ``headers``)."""

    def __init__(self, status_code: int, message: str, headers: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers


class APIConnectionError(ConnectionError):
    """The endpoint could not be reached, or dropped the connection mid-answer."""


class Reply(NamedTuple):
    """What a judge call needs from a completion: its text and its token counts."""

    text: str | None
    prompt_tokens: int
    completion_tokens: int


class Endpoint(NamedTuple):
    """Where a lean call goes, and the model name that server knows."""

    url: str  # .../chat/completions
    headers: dict[str, str]
    model: str
    reasoning: bool  # OpenAI's own reasoning models: max_completion_tokens


def endpoint(spec: str, api_base: str | None, api_key: str | None) -> Endpoint | None:
    """The endpoint of an ``openai/…`` or ``hosted_vllm/…`` spec, or None for litellm.

    Resolved the way litellm resolves it: an explicit ``api_base``/``api_key`` wins, then
    ``OPENAI_BASE_URL``/``OPENAI_API_BASE``/``OPENAI_API_KEY`` (``openai/``, else api.openai.com)
    or ``HOSTED_VLLM_API_BASE``/``HOSTED_VLLM_API_KEY`` (``hosted_vllm/``, which needs a base).
    """
    provider, _, model = spec.partition("/")
    env = os.environ
    if provider == "openai":
        base = api_base or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or OPENAI_URL
        key = api_key or env.get("OPENAI_API_KEY")
    elif provider == "hosted_vllm":
        base = api_base or env.get("HOSTED_VLLM_API_BASE") or ""
        key = api_key or env.get("HOSTED_VLLM_API_KEY")
        if not base:
            return None
    else:
        return None
    return _endpoint(base, key, model)


@functools.lru_cache(maxsize=1024)
def _endpoint(base: str, key: str | None, model: str) -> Endpoint:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    base = base.rstrip("/")
    url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
    reasoning = base == OPENAI_URL and model.startswith(_REASONING_PREFIXES)
    return Endpoint(url, headers, model, reasoning)


def price_map() -> dict[str, Any]:
    """litellm's price map: ``litellm.model_cost`` once litellm is in use (it holds any model
    registered since), else the file it loads that table from (offline, as
    ``LITELLM_LOCAL_MODEL_COST_MAP`` has it), read without importing litellm (~4 s of CPU)."""
    module = sys.modules.get("litellm")
    return module.model_cost if module is not None else _bundled_price_map()


@functools.cache
def _bundled_price_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return {}
    folder = Path(next(iter(spec.submodule_search_locations)))
    return json.loads((folder / "model_prices_and_context_window_backup.json").read_bytes())


@functools.lru_cache(maxsize=256)
def price(spec: str) -> tuple[float, float]:
    """Dollars per prompt and per completion token, from litellm's price map (0 when unknown).

    Looked up once per model; ``hosted_vllm/`` models are priced only under their full spec
    (a self-hosted model is free unless someone priced it).
    """
    provider, _, model = spec.partition("/")
    names = [spec, model] if provider == "openai" else [spec]
    for name in names:
        entry = price_map().get(name)
        if entry and entry.get("input_cost_per_token") is None and "litellm" not in sys.modules:
            import litellm  # an alias (``…-latest``) that litellm prices from another entry

            entry = litellm.model_cost.get(name)
        if entry:
            prompt = float(entry.get("input_cost_per_token") or 0.0)
            return prompt, float(entry.get("output_cost_per_token") or 0.0)
    return 0.0, 0.0


class OpenAITransport:
    """Pooled sessions, one per event loop and base URL; closed when their loop shuts down."""

    def __init__(self) -> None:
        self._sessions: LoopLocal = {}

    def _session(self, url: str) -> aiohttp.ClientSession:
        sessions: dict[str, aiohttp.ClientSession] = loop_local(self._sessions, _LoopSessions)
        session = sessions.get(url)
        if session is None or session.closed:
            session = sessions[url] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=None),  # ModelClient bounds every call
                cookie_jar=aiohttp.DummyCookieJar(),  # a model API sets no cookies
                skip_auto_headers=("User-Agent",),
            )
        return session

    async def complete(
        self, where: Endpoint, request: dict[str, Any], messages: list[dict[str, Any]]
    ) -> Reply:
        """One chat completion; ``request`` holds the OpenAI parameters besides the messages."""
        body = {**request, "model": where.model, "messages": messages}
        if where.reasoning and "max_tokens" in body:
            body["max_completion_tokens"] = body.pop("max_tokens")
        data = pydantic_core.to_json(body)
        try:
            async with self._session(where.url).post(
                where.url, data=data, headers=where.headers
            ) as response:
                raw = await response.read()
                if response.status >= 400:
                    raise APIStatusError(response.status, _error_text(raw), response.headers)
        except aiohttp.ClientError as exc:  # refused, reset, dropped mid-answer
            raise APIConnectionError(f"{type(exc).__name__}: {exc}") from exc
        return _reply(raw)

    async def aclose(self) -> None:
        """Close the running loop's sessions."""
        entry = self._sessions.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].aclose()


class _LoopSessions(dict):
    """One loop's sessions. An async generator parked on the loop closes them when the loop
    shuts down (``asyncio.run`` closes every live async generator first), so a worker that runs
    a fresh loop per batch leaves no open sockets behind."""

    def __init__(self) -> None:
        super().__init__()
        self._closer = self._close_at_shutdown()  # kept: the loop holds it only weakly
        with contextlib.suppress(StopIteration):  # run it to its ``yield``: the loop
            self._closer.__anext__().send(None)  # registers it on this first step

    async def _close_at_shutdown(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        for session in list(self.values()):
            await session.close()


def _reply(raw: bytes) -> Reply:
    """The text and token counts of a chat completion body."""
    try:
        data = pydantic_core.from_json(raw)
        choices = data.get("choices") or [{}]
        text = (choices[0].get("message") or {}).get("content")
        usage = data.get("usage") or {}
    except (ValueError, AttributeError, TypeError, IndexError) as exc:
        raise APIStatusError(502, f"not a chat completion: {raw[:200]!r}") from exc
    return Reply(
        text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    )


def _error_text(raw: bytes) -> str:
    """The server's error message (OpenAI's ``{"error": {"message"}}``), else its raw text."""
    try:
        error = pydantic_core.from_json(raw).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:300]
    except (ValueError, AttributeError):
        pass
    return raw[:300].decode(errors="replace")
