"""How the model client retries one call, on tenacity: how long to wait, when to give up.

Which failures are transient is the client's to say (it knows litellm's errors). This module
says how long to wait (what the server asked for in ``retry-after``, else exponential backoff
with jitter) and when another try is pointless (the attempt limit, a second time-out, a wait
that would pass the batch's deadline).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from judge_service.wire import parse_retry_after

log = logging.getLogger("judge_service.judging.client")
Predicate = Callable[[BaseException], bool]
T = TypeVar("T")


class CallRetries:
    """The retries of one model call. :meth:`run` re-raises the last failure when they stop;
    ``late`` then holds the wait that was not waited for, if that is why.

    ``deadline`` is a ``time.monotonic()`` value that no wait may pass; a wait of over twice
    ``max_backoff_s`` (a server's ``retry-after``) is not waited for either.
    """

    def __init__(
        self,
        *,
        model: str,
        attempts: int,
        backoff_s: float,
        max_backoff_s: float,
        deadline: float | None,
        retryable: Predicate,
        timed_out: Predicate,
    ) -> None:
        self.model, self.attempts, self.deadline = model, attempts, deadline
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.retryable, self.timed_out = retryable, timed_out
        self.timeouts = 0
        self.late: float | None = None

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``'s result, tried again while this policy says so.

        The first try runs outside tenacity, whose async loop costs ~0.1 ms of CPU a call
        (it inspects its hooks on every turn): a GRPO step makes hundreds of judge calls, and
        nearly all succeed at once. A failed first try is replayed as the loop's first
        attempt, so the policy still sees every try."""
        try:
            return await attempt()
        except Exception as exc:
            first: Exception | None = exc

        async def again() -> T:
            nonlocal first
            if first is not None:
                failed, first = first, None
                raise failed
            return await attempt()

        return await self._retrying()(again)

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(
            retry=retry_if_exception(self.retryable),
            # tenacity types ``|`` for its own stops only; it takes any stop callable
            stop=stop_after_attempt(self.attempts) | self._give_up,  # type: ignore[operator]
            wait=self._wait,
            before_sleep=self._log,
            sleep=asyncio.sleep,
            reraise=True,
        )

    def _wait(self, state: RetryCallState) -> float:
        """What the server asked for, else exponential backoff times 0.5-1 (jitter, so that
        calls that failed together do not come back together)."""
        failure = _failure(state)
        hint = server_hint(failure) if failure is not None else None
        if hint is not None:
            return hint
        backoff = wait_exponential(multiplier=self.backoff_s, max=self.max_backoff_s)
        return backoff(state) * (0.5 + random.random() / 2)

    def _give_up(self, state: RetryCallState) -> bool:
        """Tenacity's ``stop`` besides the attempt limit: at the second time-out (a server
        that hung twice will hang again), or when the next wait is too long or too late."""
        failure = _failure(state)
        self.timeouts += failure is not None and self.timed_out(failure)
        if self.timeouts >= 2:
            return True
        wait = state.upcoming_sleep
        past = self.deadline is not None and time.monotonic() + wait >= self.deadline
        if past or wait > self.max_backoff_s * 2:
            self.late = wait
        return self.late is not None

    def _log(self, state: RetryCallState) -> None:
        failure = _failure(state)
        said = failure and describe(failure)
        log.info("retrying %s in %.2fs after %s", self.model, state.upcoming_sleep, said)


def server_hint(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (its ``retry-after``), wherever the error keeps it:
    litellm's errors and the lean transport's keep the response headers in different places."""
    for headers in (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    ):
        value = headers.get("retry-after") if headers else None
        if value is not None and (wait := parse_retry_after(str(value))) is not None:
            return wait
    return None


def describe(exc: BaseException) -> str:
    """A failed call in one line: what failed, its HTTP status if any, the first line said."""
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    name = "no answer in time" if isinstance(exc, TimeoutError) else type(exc).__name__
    return f"{name}{f' (HTTP {status})' if status else ''}: {text}".rstrip(": ")


def _failure(state: RetryCallState) -> BaseException | None:
    """The exception of the attempt that tenacity is deciding about, if it raised one."""
    return state.outcome.exception() if state.outcome else None
