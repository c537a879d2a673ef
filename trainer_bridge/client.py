"""``RewardClient`` and ``AsyncRewardClient``: chunked, concurrent, retried, deadline-bound.

Every chunk carries an idempotency key made once per ``score`` call, so a retry
after a lost answer returns the batch already scored instead of scoring twice.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import random
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, NoReturn, Self, TypeVar

import httpx
from pydantic import TypeAdapter
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    stop_never,
    wait_exponential,
    wait_fixed,
)

from judge_service.wire import (
    RewardFields,
    RewardFieldsAnswer,
    RewardRequest,
    RewardResponse,
    SampleIn,
    SampleResult,
    parse_retry_after,
)

SampleLike = SampleIn | dict[str, Any]
#: Validates a whole call's samples in one pydantic-core pass (instances pass as they are).
_SAMPLES = TypeAdapter(list[SampleIn])
_REWARD_FIELDS = TypeAdapter(RewardFieldsAnswer)


class _RewardsAnswer(NamedTuple):
    batch_id: str
    status: str
    results: list[RewardFields]


A = TypeVar("A", RewardResponse, _RewardsAnswer)  # a chunk's answer, as a parser reads it
T = TypeVar("T")


class Reward(NamedTuple):
    """What a trainer takes from a result: the reward (None when masked, never 0), whether
    it was computed, and the hindsight audit's hack score."""

    reward: float | None
    valid: bool
    hack_score: float


JSON_HEADERS = {"Content-Type": "application/json"}


class RewardError(Exception):
    """Base of every error the bridge raises."""


class RewardServiceError(RewardError):
    """The service answered with an error (a 4xx is never retried)."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(f"judge-service answered {status} {code}: {message}")
        self.status, self.code, self.message, self.detail = status, code, message, detail


class RewardTimeout(RewardError):
    """The overall deadline passed before every chunk was scored."""


class RewardConnectionError(RewardError):
    """The service could not be reached after every retry."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA bundle (~20 ms), and
    httpx would build a new one for every client, that is for every ``score`` call."""
    return httpx.create_ssl_context()


def _service_error(response: httpx.Response) -> RewardServiceError:
    try:
        error = response.json()["error"]
        return RewardServiceError(
            response.status_code, error["code"], error["message"], error.get("detail")
        )
    except (ValueError, KeyError, TypeError):
        return RewardServiceError(response.status_code, "http_error", response.text[:500])


class LoopHTTPClient:
    """One pooled HTTP client per running event loop, kept for the next call on the same
    loop: a trainer calls every step from one loop (GRPOTrainer's ``async_loop``), so the
    connection stays open between steps. A client made on another loop is dropped. The
    subclass says how many connections (:meth:`_connections`)."""

    _http: httpx.AsyncClient | None = None
    _http_loop: asyncio.AbstractEventLoop | None = None

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float,
        retries: int,
        backoff_s: float,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.transport = transport  # tests pass httpx.MockTransport here

    def _connections(self) -> int:
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _client(self) -> httpx.AsyncClient:
        """The HTTP client of the running event loop (class docstring)."""
        loop = asyncio.get_running_loop()
        if self._http is None or self._http_loop is not loop:
            self._http = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers(),
                limits=httpx.Limits(max_connections=self._connections()),
                timeout=None,
                verify=_tls_context(),
                transport=self.transport,
            )
            self._http_loop = loop
        return self._http

    async def aclose(self) -> None:
        """Close the connections made on the running loop."""
        http, self._http = self._http, None
        if http is not None and self._http_loop is asyncio.get_running_loop():
            await http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class AsyncRewardClient(LoopHTTPClient):
    """Scores any number of samples against one service, from any event loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        retries: int = 4,
        *,
        chunk_size: int = 512,
        max_concurrency: int = 8,
        backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, retries, backoff_s, transport)
        self.chunk_size = chunk_size
        self.max_concurrency = max_concurrency
        self.last_responses: list[RewardResponse] = []

    def _connections(self) -> int:
        return self.max_concurrency * 2

    async def score(
        self,
        samples: Sequence[SampleLike],
        rubric: str | None = None,
        judges: list[Any] | None = None,
        run_id: str | None = None,
        step: int | None = None,
        **options: Any,
    ) -> list[SampleResult]:
        """One result per sample, in order. Raises RewardError subclasses on failure."""
        parsed, answers = await self._call(
            samples, _parse, rubric=rubric, judges=judges, run_id=run_id, step=step, **options
        )
        self.last_responses = answers
        by_id = {r.id: r for answer in answers for r in answer.results}
        return [by_id[sample.id] for sample in parsed]

    async def rewards(
        self,
        samples: Sequence[SampleLike],
        rubric: str | None = None,
        judges: list[Any] | None = None,
        run_id: str | None = None,
        step: int | None = None,
        **options: Any,
    ) -> list[Reward]:
        """Like :meth:`score`, with each sample's reward, validity and hack score only.

        The answers are read for those fields alone, ~3x faster than whole results: a
        trainer waits on this every step (the TRL adapter uses it). ``detail`` is
        ``compact`` unless given.
        """
        options.setdefault("detail", "compact")
        parsed, answers = await self._call(
            samples,
            _parse_rewards,
            rubric=rubric,
            judges=judges,
            run_id=run_id,
            step=step,
            **options,
        )
        by_id = {r["id"]: r for answer in answers for r in answer.results}
        in_order = [by_id[sample.id] for sample in parsed]
        # ``_make`` is tuple.__new__: no Python-level __new__ per sample
        return [Reward._make((r["reward"], r["valid"], r.get("hack_score", 0.0))) for r in in_order]

    async def _call(
        self,
        samples: Sequence[SampleLike],
        parse: Callable[[httpx.Response], A],
        *,
        rubric: str | None,
        judges: list[Any] | None,
        run_id: str | None,
        step: int | None,
        **options: Any,
    ) -> tuple[list[SampleIn], list[A]]:
        """The samples as validated, and the done answer of each chunk, read by ``parse``."""
        parsed = _SAMPLES.validate_python(list(samples))
        if not parsed:
            return [], []
        counts = collections.Counter(s.id for s in parsed)
        repeated = sorted(sample_id for sample_id, n in counts.items() if n > 1)
        if repeated:
            raise ValueError(f"sample ids must be unique in one call; repeated: {repeated[:10]}")
        call_id = uuid.uuid4().hex
        chunks = chunk_by_group(parsed, self.chunk_size)
        deadline = time.monotonic() + self.timeout
        gate = asyncio.Semaphore(self.max_concurrency)
        http = self._client()

        async def one(index: int, chunk: list[SampleIn]) -> A:
            request = RewardRequest(
                samples=chunk,
                rubric=rubric,
                judges=judges,
                run_id=run_id,
                step=step,
                idempotency_key=f"{call_id}-{index}",
                **options,
            )
            async with gate:
                return await self._send(http, request, deadline, parse)

        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                answers = await asyncio.gather(*(one(i, c) for i, c in enumerate(chunks)))
        except TimeoutError as exc:
            raise RewardTimeout(f"no complete answer within {self.timeout} s") from exc
        return parsed, list(answers)

    async def _send(
        self,
        http: httpx.AsyncClient,
        request: RewardRequest,
        deadline: float,
        parse: Callable[[httpx.Response], A],
    ) -> A:
        """The chunk's done answer. A 429, a 5xx or no answer at all is retried ``retries``
        times with backoff (or what Retry-After asks); a 4xx is raised at once."""
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(httpx.TransportError) | retry_if_result(_try_again),
            stop=stop_after_attempt(self.retries + 1),
            wait=_pause(wait_exponential(multiplier=self.backoff_s), deadline),
            sleep=asyncio.sleep,
            retry_error_callback=self._give_up,
        )
        response = await retrying(self._post_when_ready, http, request, deadline)
        answer = parse(response)
        if answer.status != "done":
            answer = await self._poll(http, answer.batch_id, deadline, request.detail, parse)
        return answer

    async def _post_when_ready(
        self, http: httpx.AsyncClient, request: RewardRequest, deadline: float
    ) -> httpx.Response:
        """Post the chunk, and again for as long as the service asks to be asked later: a
        503 with Retry-After (no worker alive yet, say) is retried until the deadline, not
        counted against ``retries``."""
        retrying = AsyncRetrying(
            retry=retry_if_result(_asked_back),
            stop=stop_never,  # the deadline (``_call``) ends it
            wait=_pause(wait_fixed(self.backoff_s), deadline),
            sleep=asyncio.sleep,
        )
        return await retrying(self._post, http, request, deadline)

    async def _post(
        self, http: httpx.AsyncClient, request: RewardRequest, deadline: float
    ) -> httpx.Response:
        """One POST of the chunk: its answer, unless it is an error not worth retrying."""
        left = deadline - time.monotonic()
        request.timeout_s = max(1.0, left - 1.0)
        body = request.model_dump_json(exclude_none=True)  # pydantic-core straight to JSON
        response = await http.post("/v1/rewards", content=body, headers=JSON_HEADERS, timeout=left)
        if response.status_code in (200, 202) or _try_again(response):
            return response
        raise _service_error(response)

    def _give_up(self, state: RetryCallState) -> NoReturn:
        """What tenacity raises when the retries are spent: the service's last error, or
        :class:`RewardConnectionError` when it could not be reached."""
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            raise _service_error(outcome.result())
        problem = outcome.exception() if outcome is not None else None
        raise RewardConnectionError(f"{self.base_url}: {problem!r}") from problem

    async def _poll(
        self,
        http: httpx.AsyncClient,
        batch_id: str,
        deadline: float,
        detail: str,
        parse: Callable[[httpx.Response], A],
    ) -> A:
        delay = 0.05
        while True:
            try:
                response = await http.get(f"/v1/rewards/{batch_id}", params={"detail": detail})
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == 200:
                return parse(response)
            if (
                response is not None
                and response.status_code not in (202, 429)
                and (response.status_code < 500)
            ):
                raise _service_error(response)
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 1.0)


def _not_an_answer(response: httpx.Response) -> RewardServiceError:
    """A clear error when a 200 carries something else (a proxy's page, say)."""
    return RewardServiceError(
        response.status_code, "bad_response", f"not a reward answer: {response.text[:200]!r}"
    )


def _parse(response: httpx.Response) -> RewardResponse:
    """The whole answer."""
    try:
        return RewardResponse.model_validate_json(response.content)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise _not_an_answer(response) from exc


def _parse_rewards(response: httpx.Response) -> _RewardsAnswer:
    """The answer's status and each result's reward fields; the rest is skipped."""
    try:
        answer = _REWARD_FIELDS.validate_json(response.content)
    except ValueError as exc:
        raise _not_an_answer(response) from exc
    return _RewardsAnswer(answer["batch_id"], answer["status"], answer["results"])


def chunk_by_group(samples: list[SampleIn], size: int) -> list[list[SampleIn]]:
    """Chunks of about ``size`` samples that never split a GRPO group (same ``group_id``).

    A group is judged and summarised (``groups`` in the answer, relative judges) within
    one batch, so all its samples travel together; a group larger than ``size`` makes a
    chunk of its own. Samples without a group fill chunks in order.
    """
    groups: dict[str | None, list[SampleIn]] = {}
    loose: list[list[SampleIn]] = []
    for sample in samples:
        if sample.group_id is None:
            loose.append([sample])
        else:
            if sample.group_id not in groups:
                groups[sample.group_id] = []
                loose.append(groups[sample.group_id])
            groups[sample.group_id].append(sample)
    chunks: list[list[SampleIn]] = []
    current: list[SampleIn] = []
    for unit in loose:
        if current and len(current) + len(unit) > size:
            chunks.append(current)
            current = []
        current.extend(unit)
    if current:
        chunks.append(current)
    return chunks


def _try_again(response: httpx.Response) -> bool:
    """A 429 or 5xx: the service (or a proxy before it) may answer the next try."""
    return response.status_code >= 500 or response.status_code == 429


def _asked_back(response: httpx.Response) -> bool:
    return response.status_code == 503 and _retry_after(response) is not None


def _retry_after(response: httpx.Response) -> float | None:
    return parse_retry_after(response.headers.get("retry-after"))


def _pause(
    backoff: Callable[[RetryCallState], float], deadline: float
) -> Callable[[RetryCallState], float]:
    """Tenacity's ``wait``: what Retry-After asks (else ``backoff``) times 1-1.5, so that
    clients sent back together come back apart, and never past ``deadline``."""

    def wait(state: RetryCallState) -> float:
        failed = state.outcome
        hint = _retry_after(failed.result()) if failed and not failed.failed else None
        pause = (hint or backoff(state)) * (1 + random.random() / 2)
        return min(pause, max(0.0, deadline - time.monotonic()))

    return wait


class RewardClient:
    """The blocking twin of :class:`AsyncRewardClient`, safe inside a running event loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        retries: int = 4,
        **options: Any,
    ) -> None:
        self._client = AsyncRewardClient(base_url, api_key, timeout, retries, **options)

    @property
    def last_responses(self) -> list[RewardResponse]:
        return self._client.last_responses

    def score(
        self,
        samples: Sequence[SampleLike],
        rubric: str | None = None,
        judges: list[Any] | None = None,
        run_id: str | None = None,
        step: int | None = None,
        **options: Any,
    ) -> list[SampleResult]:
        return self._blocking(
            self._client.score,
            samples,
            rubric=rubric,
            judges=judges,
            run_id=run_id,
            step=step,
            **options,
        )

    def rewards(
        self,
        samples: Sequence[SampleLike],
        rubric: str | None = None,
        judges: list[Any] | None = None,
        run_id: str | None = None,
        step: int | None = None,
        **options: Any,
    ) -> list[Reward]:
        """Each sample's reward, validity and hack score (see ``AsyncRewardClient.rewards``)."""
        return self._blocking(
            self._client.rewards,
            samples,
            rubric=rubric,
            judges=judges,
            run_id=run_id,
            step=step,
            **options,
        )

    def _blocking(self, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run ``call`` to the end on an event loop of its own (on a thread when one is
        already running here), then close that loop's connections."""

        async def call_and_close() -> T:
            try:
                return await call(*args, **kwargs)
            finally:
                await self._client.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(call_and_close())
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, call_and_close()).result()
