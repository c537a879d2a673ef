"""``EpisodeClient`` and ``AsyncEpisodeClient``: a world's episodes over HTTP (reset, step, state).

The routes are the service's OpenEnv-style episodes: ``POST /v1/worlds/{id}/episodes`` (reset),
``POST /v1/episodes/{id}/step`` and ``GET /v1/episodes/{id}`` (state). The conventions are
those of :mod:`trainer_bridge.client`: the API key as a bearer token, Retry-After honoured, a
503 that asks to come back does not spend the retries, and every failure is a
:class:`~trainer_bridge.client.RewardError` that says what the service answered.

A reset or a step changes the episode, so it is sent again only when the service surely did not
act on it: the connection was never made, or the service refused it (429, 503). A step whose
answer was lost on the way back is not re-sent (it would act twice); the error says so, and
:meth:`AsyncEpisodeClient.state` tells what the episode holds. Reads are retried like rewards.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    retry_if_result,
    wait_exponential,
)

from trainer_bridge.client import (
    JSON_HEADERS,
    LoopHTTPClient,
    RewardConnectionError,
    RewardServiceError,
    RewardTimeout,
    _asked_back,
    _pause,
    _service_error,
    _try_again,
)

T = TypeVar("T")

#: Errors raised before the request left this machine: sending it again cannot act twice.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class EpisodeEnded(RewardServiceError):
    """The episode already ended (409): its reward is in :meth:`AsyncEpisodeClient.state`."""

    resent = False  # True when the step that ended it was this call's own earlier try


@dataclass(frozen=True)
class EpisodeStart:
    """A reset's answer: the episode and what the agent sees first (system, first user turn);
    ``sources``: whose words each message is (empty from a service that does not say)."""

    episode_id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    sources: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class EpisodeStep:
    """A step's answer. ``result`` (only once ``done``) holds the verdict and the scored sample
    (the wire ``SampleResult`` as JSON); ``reward`` is ``None`` (masked) while the episode runs
    or when the world could not tell. ``sources``: one per message, whose words it is (the
    world's with its answer path, the user's), for ECHO (:mod:`trainer_bridge.echo`)."""

    messages: list[dict[str, Any]]
    done: bool
    reward: float | None
    result: dict[str, Any] | None = field(default=None)
    sources: list[dict[str, Any]] = field(default_factory=list)

    @property
    def sample(self) -> dict[str, Any]:
        """The scored sample of a finished episode (empty before the end)."""
        sample = (self.result or {}).get("sample")
        return sample if isinstance(sample, dict) else {}

    @property
    def valid(self) -> bool:
        """Whether a finished episode has a reward: its sample was scored (none when the
        sample is masked, was not scored, or the world could not tell)."""
        return self.done and self.reward is not None


def _refused(response: httpx.Response) -> bool:
    """429 or 503: the service turned the request away before acting on it."""
    return response.status_code in (429, 503)


def _ended(error: RewardServiceError) -> RewardServiceError:
    """A 409 saying the episode is done becomes :class:`EpisodeEnded` (another 409, a step
    racing another one, stays as it is)."""
    detail = error.detail if isinstance(error.detail, dict) else {}
    if error.status != 409 or detail.get("status") != "done":
        return error
    return EpisodeEnded(error.status, error.code, error.message, error.detail)


def reward_of(result: Mapping[str, Any]) -> float | None:
    """A finished episode's reward as the step route gives it: the scored sample's, ``None``
    when the sample is masked or was not scored."""
    sample = result.get("sample")
    if isinstance(sample, Mapping) and sample.get("valid") and sample.get("reward") is not None:
        return float(sample["reward"])
    return None


def _sources(observation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The observation's sources when they are one per message (else none: an older service)."""
    sources = observation.get("sources")
    messages = observation.get("messages") or []
    if not isinstance(sources, list) or len(sources) != len(messages):
        return []
    return [s if isinstance(s, dict) else {} for s in sources]


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise RewardServiceError(
            response.status_code, "bad_response", f"not an episode answer: {response.text[:200]!r}"
        )
    return answer


def _bad(answer: Mapping[str, Any], what: str) -> NoReturn:
    raise RewardServiceError(200, "bad_response", f"no {what} in {str(dict(answer))[:200]}")


class AsyncEpisodeClient(LoopHTTPClient):
    """Resets, steps and reads episodes of any world of one service, from any event loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        retries: int = 4,
        *,
        backoff_s: float = 0.5,
        max_connections: int = 64,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        # ``timeout``: per call, every retry included
        super().__init__(base_url, api_key, timeout, retries, backoff_s, transport)
        self.max_connections = max_connections

    def _connections(self) -> int:
        return self.max_connections

    async def reset(
        self,
        world_id: str,
        task_id: str,
        *,
        seed: int | None = None,
        run_id: str | None = None,
        step: int | None = None,
        max_turns: int | None = None,
    ) -> EpisodeStart:
        """A new episode of ``task_id``; its reward becomes a sample of ``run_id``/``step``."""
        body: dict[str, Any] = {"task_id": task_id}
        for name, value in (("seed", seed), ("run_id", run_id), ("step", step)):
            if value is not None:
                body[name] = value
        if max_turns is not None:
            body["max_turns"] = max_turns
        answer = await self._call("POST", f"/v1/worlds/{world_id}/episodes", body, acts=True)
        observation = answer.get("observation")
        if not isinstance(answer.get("episode_id"), str) or not isinstance(observation, dict):
            _bad(answer, "episode_id and observation")
        return EpisodeStart(
            episode_id=answer["episode_id"],
            messages=list(observation.get("messages") or []),
            tools=list(observation.get("tools") or []),
            sources=_sources(observation),
        )

    async def step(
        self, episode_id: str, action: Mapping[str, Any], *, end: bool = False
    ) -> EpisodeStep:
        """Act once: ``action`` is an assistant message (text and/or ``tool_calls``, OpenAI
        format); ``end`` ends the episode after it. Raises :class:`EpisodeEnded` when it had.

        When the service refused a try after acting on it (a 503 once the episode was stored)
        and the next try finds the episode ended by it, the answer is the stored end: its
        reward and result, without the observation (read it with :meth:`state`)."""
        body: dict[str, Any] = {"action": dict(action)}
        if end:
            body["end"] = True
        try:
            answer = await self._call("POST", f"/v1/episodes/{episode_id}/step", body, acts=True)
        except EpisodeEnded as ended:
            stored = await self.state(episode_id) if ended.resent else {}
            result = stored.get("result")
            if not isinstance(result, dict) or stored.get("status") != "done":
                raise
            return EpisodeStep(messages=[], done=True, reward=reward_of(result), result=result)
        observation = answer.get("observation")
        if not isinstance(observation, dict) or not isinstance(answer.get("done"), bool):
            _bad(answer, "observation and done")
        reward = answer.get("reward")
        return EpisodeStep(
            messages=list(observation.get("messages") or []),
            done=answer["done"],
            reward=float(reward) if isinstance(reward, int | float) else None,
            result=answer.get("result") if isinstance(answer.get("result"), dict) else None,
            sources=_sources(observation),
        )

    async def state(self, episode_id: str) -> dict[str, Any]:
        """The episode as stored: messages, the entity states touched, answer paths, status,
        and once ended its verdict and result."""
        return await self._call("GET", f"/v1/episodes/{episode_id}")

    async def world(self, world_id: str) -> dict[str, Any]:
        """A world's report (``GET /v1/worlds/{id}``): its forge ``jobs``, tools, fidelity."""
        return await self._call("GET", f"/v1/worlds/{world_id}")

    async def tasks(self, job_id: str, *, page: int = 1000) -> list[dict[str, Any]]:
        """Every task of a forge job (``GET /v1/tasks``): ``id``, ``prompt``, ``tools``, ..."""
        found: list[dict[str, Any]] = []
        while True:
            params = {"job_id": job_id, "limit": page, "offset": len(found)}
            batch = (await self._call("GET", "/v1/tasks", params=params)).get("tasks") or []
            found.extend(batch)
            if len(batch) < page:
                return found

    async def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        acts: bool = False,
    ) -> dict[str, Any]:
        """The answer's JSON. ``acts``: the request changes an episode, so it is sent again
        only when it cannot have been acted on."""
        deadline = time.monotonic() + self.timeout
        http = self._client()
        spent = tries = 0

        def stop(state: RetryCallState) -> bool:
            """``retries`` spent, a 503 with Retry-After not counted, or the deadline reached."""
            nonlocal spent
            outcome = state.outcome
            if outcome is None or outcome.failed or not _asked_back(outcome.result()):
                spent += 1
            return spent > self.retries or time.monotonic() >= deadline

        again = _refused if acts else _try_again
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(_NOT_SENT if acts else httpx.TransportError)
            | retry_if_result(again),
            stop=stop,
            wait=_pause(wait_exponential(multiplier=self.backoff_s), deadline),
            sleep=asyncio.sleep,
            retry_error_callback=self._give_up,
        )

        async def once() -> httpx.Response:
            nonlocal tries
            tries += 1
            left = max(0.001, deadline - time.monotonic())
            content = None if body is None else json.dumps(body).encode()
            try:
                response = await http.request(
                    method,
                    path,
                    content=content,
                    params=params,
                    headers=JSON_HEADERS if content is not None else None,
                    timeout=left,
                )
            except httpx.TransportError as exc:
                if acts and not isinstance(exc, _NOT_SENT):
                    raise RewardConnectionError(
                        f"{method} {self.base_url}{path}: the answer was lost ({exc!r}); not sent "
                        "again, since the service may have acted on it: read the episode's state"
                    ) from exc
                raise
            if 200 <= response.status_code < 300 or again(response):
                return response
            error = _ended(_service_error(response))
            if isinstance(error, EpisodeEnded):
                error.resent = tries > 1
            raise error

        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                response = await retrying(once)
        except TimeoutError as exc:
            raise RewardTimeout(f"{method} {path}: no answer within {self.timeout} s") from exc
        return _json(response)

    def _give_up(self, state: RetryCallState) -> NoReturn:
        """The service's last error, or :class:`RewardConnectionError` when unreachable."""
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            raise _ended(_service_error(outcome.result()))
        problem = outcome.exception() if outcome is not None else None
        raise RewardConnectionError(f"{self.base_url}: {problem!r}") from problem


class EpisodeClient:
    """The blocking twin of :class:`AsyncEpisodeClient`, safe inside a running event loop.

    Its calls run on an event loop of its own, on a daemon thread, so the connections stay
    open from one step to the next (a rollout steps tens of times). ``close`` ends both.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        retries: int = 4,
        **options: Any,
    ) -> None:
        self.client = AsyncEpisodeClient(base_url, api_key, timeout, retries, **options)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def reset(self, world_id: str, task_id: str, **options: Any) -> EpisodeStart:
        """See :meth:`AsyncEpisodeClient.reset`."""
        return self._run(self.client.reset(world_id, task_id, **options))

    def step(self, episode_id: str, action: Mapping[str, Any], *, end: bool = False) -> EpisodeStep:
        """See :meth:`AsyncEpisodeClient.step`."""
        return self._run(self.client.step(episode_id, action, end=end))

    def state(self, episode_id: str) -> dict[str, Any]:
        return self._run(self.client.state(episode_id))

    def world(self, world_id: str) -> dict[str, Any]:
        return self._run(self.client.world(world_id))

    def tasks(self, job_id: str) -> list[dict[str, Any]]:
        return self._run(self.client.tasks(job_id))

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        with self._guard:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="episode-client", daemon=True
                )
                self._thread.start()
            loop = self._loop
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(call, loop)
        return future.result()

    def close(self) -> None:
        """Close the connections and stop the loop's thread."""
        with self._guard:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.client.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def __enter__(self) -> EpisodeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
