"""The one place that calls models, with limits, retries, cache and cost.

Judges hand over messages and a JSON schema; :class:`ModelClient` returns the parsed verdict and
what it cost. It bounds in-flight calls per model (and, when asked, per judge server), times
out, retries transient failures with backoff (honouring ``retry-after``), re-asks once when the
reply does not match the schema, and caches verdicts on what decides them (never on the
rendered prompt, whose fence is random).
Environment variables litellm reads itself (``OPENAI_API_BASE``, ``OPENAI_API_KEY`` ...) are never
overridden: ``api_base`` is passed only when a judge names one explicitly.

Two transports make the HTTP call. OpenAI-compatible endpoints (``openai/…``, and
``hosted_vllm/…`` with a base URL) go through the lean one (``judging.client_openai``:
one pooled POST, ~10x less CPU per call than litellm); every other provider, and every call when
``JS_OPENAI_TRANSPORT=litellm``, goes through ``litellm.acompletion``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, Literal

from judge_service.domain import NO_USAGE, CallUsage
from judge_service.judging.client_cache import (
    LoopLocal,
    MemoryCache,
    ResultCache,
    cache_key,
    loop_local,
    make_cache,
)
from judge_service.judging.client_openai import Endpoint, OpenAITransport, endpoint, price
from judge_service.judging.output import ResponseFormatKind, parse_reply, response_format
from judge_service.judging.retry import CallRetries, describe

# Without this, importing litellm tries to download a price list and waits through retries.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
log = logging.getLogger(__name__)


@functools.cache
def _litellm() -> ModuleType:
    """litellm, imported on first use: the import costs ~4 s of CPU, which every ``serve``,
    worker and command paid at start, also where no call goes through litellm (the lean
    transport, deterministic judges)."""
    import litellm

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # one INFO line per call otherwise
    return litellm


def _litellm_error(exc: BaseException, *names: str) -> bool:
    """Whether ``exc`` is one of litellm's errors ``names``; never, before litellm is used."""
    module = sys.modules.get("litellm")
    return module is not None and isinstance(exc, tuple(getattr(module, n) for n in names))


Messages = list[dict[str, Any]]
Transport = Literal["lean", "litellm"]
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
_REASK = "Answer again with only a JSON object that matches the required schema."


class ModelCallError(Exception):
    """A model call failed for good (retries and the re-ask spent). Carries what it cost."""

    def __init__(self, message: str, *, usage: CallUsage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or CallUsage()


class ModelTimeout(ModelCallError, TimeoutError):
    """The call or the batch deadline ran out."""


class InvalidReply(ModelCallError):
    """The reply was not JSON matching the schema, even after the re-ask."""


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or _litellm_error(exc, "Timeout")


def _retryable(exc: BaseException) -> bool:
    """A transient failure of one attempt; never ``ModelTimeout`` (the deadline is spent)."""
    if isinstance(exc, ModelTimeout) or not isinstance(exc, Exception):
        return False
    if isinstance(exc, ConnectionError | TimeoutError) or _litellm_error(exc, "APIConnectionError"):
        return True
    return getattr(exc, "status_code", None) in _RETRY_STATUS


#: Models litellm could not price; pricing them again costs CPU on every call for nothing.
_UNPRICED: set[str] = set()


def _cost(response: Any) -> float:
    """Dollar cost of a response; 0 for local or unpriced models, never an exception."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:  # litellm priced it already (None: it could not)
        return float(hidden["response_cost"] or 0.0)
    model = str(getattr(response, "model", "") or "")
    if model in _UNPRICED:
        return 0.0
    try:
        cost = float(_litellm().completion_cost(completion_response=response) or 0.0)
    except Exception:
        cost = 0.0
    if cost == 0.0:
        _UNPRICED.add(model)
    return cost


class ModelClient:
    """Calls models for every judge of a process. Build it with :meth:`from_settings`.

    Retries are tenacity's (:mod:`judge_service.judging.retry`) rather than litellm's Router: a
    Router wants its deployments declared up front and cools a whole deployment down on errors,
    while our judges arrive as free-form specs per request and every wait has to fit inside
    the batch's deadline.
    Concurrency limits are per model and per event loop (asyncio primitives are loop-bound);
    ``endpoint_concurrency`` adds one per judge server (``api_base``), shared by every model
    served there, since a vLLM or llama.cpp server's slots are what its models share.
    """

    def __init__(
        self,
        *,
        concurrency: int = 64,
        endpoint_concurrency: int = 0,
        cache: ResultCache | None = None,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        transport: Transport = "lean",
    ) -> None:
        self.concurrency = concurrency
        self.endpoint_concurrency = endpoint_concurrency
        self.cache: ResultCache = cache if cache is not None else MemoryCache()
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.transport = transport
        self._limits: LoopLocal = {}
        self._lean = OpenAITransport()
        if transport == "litellm":  # loaded with the client, not inside a first call's deadline
            _litellm()

    @classmethod
    def from_settings(cls, settings: Any) -> ModelClient:
        return cls(
            concurrency=settings.judge_concurrency,
            endpoint_concurrency=settings.endpoint_concurrency,
            cache=make_cache(settings.cache_url),
            transport=settings.openai_transport,
        )

    def _limits_for(
        self, model: str, api_base: str | None, size: int | None = None
    ) -> tuple[asyncio.Semaphore, ...]:
        """The call's in-flight limits, in the order they are taken: its model's (``size``,
        first caller wins, overrides the default) and, with ``endpoint_concurrency`` and a
        base URL, its server's. The model's comes first so that a call waiting for its server
        never holds a server slot that another model's call could use."""
        limits: dict[Any, asyncio.Semaphore] = loop_local(self._limits, dict)
        if model not in limits:
            limits[model] = asyncio.Semaphore(size or self.concurrency)
        if not (self.endpoint_concurrency and api_base):
            return (limits[model],)
        server = ("server", api_base.rstrip("/"))
        if server not in limits:
            limits[server] = asyncio.Semaphore(self.endpoint_concurrency)
        return limits[model], limits[server]

    async def complete_json(
        self,
        model: str,
        messages: Messages | Callable[[], Messages],
        schema: dict[str, Any],
        *,
        cache_key_parts: dict[str, Any],
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        deadline: float | None = None,
        sampling: dict[str, Any] | None = None,
        response_format_kind: ResponseFormatKind = "json_schema",
        free: bool = False,
        concurrency: int | None = None,
        schema_name: str = "verdict",
    ) -> tuple[dict[str, Any], CallUsage]:
        """The verdict as a dict valid under ``schema``, and what it cost.

        ``deadline`` is a ``time.monotonic()`` value that no wait or call may pass; ``timeout``
        bounds each attempt. ``free`` marks local models (cost 0); ``concurrency`` overrides the
        in-flight limit of this model (its server's, if any, still applies). Raises
        :class:`ModelCallError` (or a subclass) when no valid verdict could be had.
        ``messages`` may be a function that makes them: called only on a cache miss, after a
        call that will queue for a slot has let the calls ahead of it send.
        """
        limits = self._limits_for(model, api_base, concurrency)
        if any(limit.locked() for limit in limits):
            # This call will queue for a slot. Let the calls that have one send first (see
            # ``_let_sends_go``): everything this call does before it queues would delay them.
            await _let_sends_go()
        sampling = dict(sampling or {})
        decisive = {"model": model, "schema": schema, "sampling": sampling}
        key = cache_key({**cache_key_parts, **decisive, "format": response_format_kind})
        cached = await self.cache.get(key)
        if cached is not None:
            return cached, CallUsage(cache_hits=1)
        fmt = response_format(response_format_kind, schema, schema_name)
        request = {"response_format": fmt, **sampling}
        lean = endpoint(model, api_base, api_key) if self.transport == "lean" else None
        if lean is None:
            request["model"] = model
            explicit = {"api_base": api_base, "api_key": api_key}  # else litellm's env vars apply
            request.update({k: v for k, v in explicit.items() if v})
        usage = NO_USAGE  # frozen: summed only when a re-ask adds a second call
        history = list(messages() if callable(messages) else messages)
        for attempt in range(2):  # the first answer, then one re-ask
            attempt_once = functools.partial(
                self._attempt, model, limits, lean, request, history, timeout, deadline, usage, free
            )
            text, spent = await self._call(model, deadline, usage, attempt_once)
            usage = spent if usage is NO_USAGE else usage + spent
            try:
                verdict = parse_reply(text, schema)
            except ValueError as exc:
                if attempt == 1:
                    raise InvalidReply(f"{model}: {exc}", usage=usage) from exc
                correction = f"That reply is invalid: {exc}. {_REASK}"
                history += [
                    {"role": "assistant", "content": text or ""},
                    {"role": "user", "content": correction},
                ]
                continue
            await self.cache.set(key, verdict)
            return verdict, usage
        raise AssertionError("unreachable")

    async def _call(
        self,
        model: str,
        deadline: float | None,
        usage: CallUsage,
        attempt: Callable[[], Awaitable[tuple[str | None, CallUsage]]],
    ) -> tuple[str | None, CallUsage]:
        """One completion (its text and usage): ``attempt`` (one try of :meth:`_attempt`),
        retried on transient failures within ``deadline``."""
        retries = CallRetries(
            model=model,
            attempts=self.max_retries + 1,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            deadline=deadline,
            retryable=_retryable,
            timed_out=_timed_out,
        )
        try:
            return await retries.run(attempt)
        except ModelTimeout:
            raise
        except Exception as exc:
            kind = ModelTimeout if _timed_out(exc) else ModelCallError
            reason = describe(exc)
            if retries.late is not None:
                reason += f"; a retry in {retries.late:.1f}s would be too late"
            raise kind(f"{model}: {reason}", usage=usage) from exc

    async def _attempt(
        self,
        model: str,
        limits: tuple[asyncio.Semaphore, ...],
        lean: Endpoint | None,
        request: dict[str, Any],
        messages: Messages,
        timeout: float,
        deadline: float | None,
        usage: CallUsage,
        free: bool,
    ) -> tuple[str | None, CallUsage]:
        """One try of a completion: a slot, then the request, both within the deadline; through
        the lean transport when ``lean`` says where, else litellm."""
        await _acquire(limits, deadline, model, usage)
        try:
            left = _left(timeout, deadline, model, usage)
            async with asyncio.timeout(left):
                if lean is not None:
                    reply = await self._lean.complete(lean, request, messages)
                    answer = reply.text, _lean_usage(model, reply, free)
                else:
                    response = await _litellm().acompletion(
                        messages=messages, timeout=left, num_retries=0, max_retries=0, **request
                    )
                    answer = _text(response), _usage(response, free)
        finally:
            queued = _release(limits)
        if queued:  # a call waits for this slot: it sends before this reply is used
            await _let_sends_go()
        return answer

    async def aclose(self) -> None:
        """Close the cache's and the transport's pooled connections of the running loop."""
        await self.cache.aclose()
        await self._lean.aclose()


async def _acquire(
    limits: tuple[asyncio.Semaphore, ...], deadline: float | None, model: str, usage: CallUsage
) -> None:
    """A slot of every limit, in order, or none: queueing counts against the deadline."""
    for index, limit in enumerate(limits):
        try:
            if limit.locked():
                async with asyncio.timeout(_left(None, deadline, model, usage)):
                    await limit.acquire()
            else:  # a free slot: taken at once, no timer to arm and cancel
                await limit.acquire()
        except BaseException:
            for taken in limits[:index]:
                taken.release()
            raise


async def _let_sends_go() -> None:
    """Yield to the event loop twice, so that calls holding a slot put their requests on the
    wire before this task goes on.

    Why two: aiohttp writes a request's body in a task of its own (eagerly started only on
    Python 3.12+), which joins the back of the loop's ready queue. The first yield lets a
    call woken for a freed slot post its request; the second lets that request's writer run
    before this task's work (parsing, judging, storing a reply, or preparing a call that
    will queue). Without them, the requests that hold a slot wait on the wire behind the
    preparation of every call that will queue for one, and each later round behind the work
    on the replies of the round before: a trainer's step waits for CPU work, not for the
    judges. ``tests/judging/test_llm_client.py`` checks the order; the figures and how they were
    found: docs/benchmarks.md (the GRPO wait).
    """
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def _release(limits: tuple[asyncio.Semaphore, ...]) -> bool:
    """Release every limit; True when one was full, so a queued call may take the slot.

    The caller then yields (:func:`_let_sends_go`): replies come back in bursts (a round of
    calls sent together), and each reply's task goes on to parse, judge, audit and store, so
    without the yield the calls queued behind the limit would send only after the whole
    burst was processed (the limit still holds: the slot was released)."""
    full = False
    for limit in limits:
        full = full or limit.locked()
        limit.release()
    return full


def _left(
    timeout: float | None, deadline: float | None, model: str, usage: CallUsage
) -> float | None:
    """Seconds this step may take: the call timeout, cut to what the deadline leaves."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise ModelTimeout(f"{model}: the batch deadline passed", usage=usage)
    return left if timeout is None else min(timeout, left)


def _text(response: Any) -> str | None:
    return response.choices[0].message.content if response.choices else None


def _usage(response: Any, free: bool) -> CallUsage:
    """Tokens and cost of a litellm response (``free``: local, not priced)."""
    tokens = getattr(response, "usage", None)
    return CallUsage(
        judge_calls=1,
        prompt_tokens=int(getattr(tokens, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(tokens, "completion_tokens", 0) or 0),
        cost_usd=0.0 if free else _cost(response),
    )


def _lean_usage(model: str, reply: Any, free: bool) -> CallUsage:
    """Tokens and cost of a lean reply, priced from litellm's map (looked up once per model)."""
    per_prompt, per_completion = (0.0, 0.0) if free else price(model)
    return _USAGE.validate_python(
        {
            "judge_calls": 1,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "cost_usd": reply.prompt_tokens * per_prompt + reply.completion_tokens * per_completion,
        }
    )


#: ``CallUsage``'s validator, called with a dict: no keyword packing in ``BaseModel.__init__``
#: (once per judge call).
_USAGE = CallUsage.__pydantic_validator__


_CLIENTS: dict[tuple[Any, ...], ModelClient] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(settings: Any = None) -> ModelClient:
    """The shared client for these settings (cache, limits, transport), built on first use."""
    if settings is None:
        from judge_service.core.settings import get_settings

        settings = get_settings()
    key = (
        settings.cache_url,
        settings.judge_concurrency,
        settings.endpoint_concurrency,
        settings.openai_transport,
    )
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = ModelClient.from_settings(settings)
        return _CLIENTS[key]


def forget_clients() -> None:
    """Drop the shared clients, and their verdict caches with them: the next ``get_client``
    builds anew (a test that must reach its fake server, not an earlier test's cached verdict)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()
