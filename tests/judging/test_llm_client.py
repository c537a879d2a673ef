"""The model client (judging.client) against the fake OpenAI server: faults, retries, cache, cost.

Every test that calls the fake runs on both transports (``transport``: lean and litellm)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

import judge_service.judging.client as llm
from judge_service.core.settings import get_settings
from judge_service.judging.client import (
    InvalidReply,
    ModelCallError,
    ModelClient,
    ModelTimeout,
    get_client,
    parse_reply,
)
from judge_service.judging.client_cache import MemoryCache, RedisCache
from judge_service.judging.client_openai import endpoint
from tests.fakes import FakeOpenAIServer, free_port
from tests.helpers import wait_until_async

SCHEMA = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["rationale", "score"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Grade: 2 + 2 = 4"}]


Build = Callable[..., ModelClient]


@pytest.fixture
def make(transport: str) -> Build:
    """Builds clients on the test's transport (each test runs on both)."""

    def build(**options: Any) -> ModelClient:
        return ModelClient(**{"backoff_s": 0.01, "transport": transport, **options})

    return build


async def ask(
    model_client: ModelClient, fake: FakeOpenAIServer, model: str, **options: Any
) -> tuple[dict[str, Any], Any]:
    options.setdefault("cache_key_parts", {"sample": "s1"})
    options.setdefault("timeout", 5.0)
    return await model_client.complete_json(
        f"openai/{model}", MESSAGES, SCHEMA, api_base=fake.url, api_key="sk-test", **options
    )


async def test_valid_reply_is_parsed_and_accounted(make: Build, fake: FakeOpenAIServer) -> None:
    verdict, usage = await ask(make(), fake, "judge-a")
    assert verdict["score"] == 0.8
    assert usage.judge_calls == 1 and usage.cache_hits == 0
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0


async def test_response_format_is_chosen_per_backend(make: Build, fake: FakeOpenAIServer) -> None:
    await ask(make(), fake, "vllm-like")
    await ask(make(), fake, "llama-like", response_format_kind="json_object")
    strict, llama = (body["response_format"] for body in fake.bodies)
    assert strict["type"] == "json_schema"
    assert strict["json_schema"]["schema"] == SCHEMA and strict["json_schema"]["strict"] is True
    assert llama == {"type": "json_object", "schema": SCHEMA}


async def test_cache_hit_makes_no_model_call(make: Build, fake: FakeOpenAIServer) -> None:
    model_client = make()
    await ask(model_client, fake, "judge-c", sampling={"temperature": 0.0})
    verdict, usage = await ask(model_client, fake, "judge-c", sampling={"temperature": 0.0})
    assert fake.requests["judge-c"] == 1
    assert usage.cache_hits == 1 and usage.judge_calls == 0 and verdict["score"] == 0.8
    # What decides the verdict is in the key: other sampling or content is a miss.
    await ask(model_client, fake, "judge-c", sampling={"temperature": 0.7})
    await ask(model_client, fake, "judge-c", cache_key_parts={"sample": "s2"})
    assert fake.requests["judge-c"] == 3


async def test_rate_limit_honours_retry_after(make: Build, fake: FakeOpenAIServer) -> None:
    fake.configure("limited", fault="429", times=1, retry_after=1)
    started = time.monotonic()
    verdict, _ = await ask(make(), fake, "limited")
    assert time.monotonic() - started >= 1.0
    assert fake.requests["limited"] == 2 and verdict["score"] == 0.8


async def test_transient_500_is_retried(make: Build, fake: FakeOpenAIServer) -> None:
    fake.configure("flaky", fault="500", times=2)
    verdict, _ = await ask(make(), fake, "flaky")
    assert fake.requests["flaky"] == 3 and verdict["score"] == 0.8


async def test_persistent_500_fails_after_retries(make: Build, fake: FakeOpenAIServer) -> None:
    with pytest.raises(ModelCallError, match="HTTP 500"):
        await ask(make(max_retries=2), fake, "always-500")
    assert fake.requests["always-500"] == 3


async def test_hang_times_out(make: Build, fake: FakeOpenAIServer) -> None:
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await ask(make(), fake, "hang", timeout=0.5)
    assert time.monotonic() - started < 2.0  # one retry of a timeout, then give up


async def test_deadline_bounds_every_wait(make: Build, fake: FakeOpenAIServer) -> None:
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await ask(make(), fake, "hang", timeout=60, deadline=started + 1.0)
    assert time.monotonic() - started < 1.5


async def test_prose_gets_one_reask_then_fails(make: Build, fake: FakeOpenAIServer) -> None:
    with pytest.raises(InvalidReply, match="not JSON") as caught:
        await ask(make(), fake, "prose")
    assert fake.requests["prose"] == 2 and caught.value.usage.judge_calls == 2
    reask = fake.bodies[-1]["messages"]
    assert reask[-2]["role"] == "assistant" and "eight out of ten" in reask[-2]["content"]
    assert reask[-1]["role"] == "user" and "invalid" in reask[-1]["content"]


async def test_reask_recovers(make: Build, fake: FakeOpenAIServer) -> None:
    fake.configure("sloppy", fault="garbage", times=1)
    verdict, usage = await ask(make(), fake, "sloppy")
    assert verdict["score"] == 0.8 and usage.judge_calls == 2


async def test_out_of_range_score_is_invalid(fake: FakeOpenAIServer) -> None:
    with pytest.raises(ValueError, match="score"):
        parse_reply('{"rationale": "x", "score": 7}', SCHEMA)
    assert parse_reply('```json\n{"rationale": "x", "score": 1}\n```', SCHEMA)["score"] == 1


def test_a_raw_newline_inside_a_string_is_accepted_and_trailing_text_is_not() -> None:
    """Small local models write line breaks inside strings unescaped: still a verdict."""
    verdict = parse_reply('{"rationale": "line one\nline two", "score": 0.5}', SCHEMA)
    assert verdict == {"rationale": "line one\nline two", "score": 0.5}
    with pytest.raises(ValueError, match="not JSON"):
        parse_reply('{"rationale": "x", "score": 1} and more', SCHEMA)


async def test_concurrency_is_limited_per_model(make: Build, fake: FakeOpenAIServer) -> None:
    model_client = make(concurrency=2)
    started = time.monotonic()
    await asyncio.gather(
        *(ask(model_client, fake, "slow-200", cache_key_parts={"i": i}) for i in range(6))
    )
    assert fake.max_in_flight["slow-200"] == 2
    assert time.monotonic() - started >= 0.6


def record_parses(events: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Append "parse" to ``events`` each time the client parses a reply."""
    parse = llm.parse_reply

    def parsing(text: str | None, schema: dict[str, Any]) -> dict[str, Any]:
        events.append("parse")
        return parse(text, schema)

    monkeypatch.setattr(llm, "parse_reply", parsing)


async def test_a_queued_call_sends_before_the_freed_slots_reply_is_used(
    make: Build, fake: FakeOpenAIServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the limit full, a reply's slot goes to the next call before the reply is parsed,
    so the next call's time on the wire overlaps the parsing, judging and storing."""
    events: list[str] = []
    model_client = make(concurrency=1)
    if transport == "lean":
        send = model_client._lean.complete

        async def sending(where: Any, request: Any, messages: Any) -> Any:
            events.append(f"send {messages[0]['content']}")
            return await send(where, request, messages)

        monkeypatch.setattr(model_client._lean, "complete", sending)
    else:
        import litellm

        send = litellm.acompletion

        async def sending(**options: Any) -> Any:
            events.append(f"send {options['messages'][0]['content']}")
            return await send(**options)

        monkeypatch.setattr(litellm, "acompletion", sending)
    record_parses(events, monkeypatch)

    async def call(name: str) -> Any:
        return await model_client.complete_json(
            "openai/slow-20", [{"role": "user", "content": name}], SCHEMA,
            cache_key_parts={"call": name}, api_base=fake.url, api_key="sk-test",
        )  # fmt: skip

    await asyncio.gather(call("a"), call("b"))
    assert events == ["send a", "send b", "parse", "parse"]
    assert fake.max_in_flight["slow-20"] == 1


async def test_requests_on_the_wire_go_before_the_work_of_queued_calls_and_replies(
    fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp writes a request in a task of its own, at the back of the loop's queue (on
    Python 3.11). A call that must queue for a slot prepares its messages only after the
    request ahead of it is written, and a reply is parsed only after the request of the
    call it freed a slot for is written: neither waits behind the other's work."""
    import aiohttp.client_reqrep

    events: list[str] = []
    model_client = ModelClient(concurrency=1, backoff_s=0.01, transport="lean")
    write = aiohttp.client_reqrep.ClientRequest.write_bytes

    async def writing(self: Any, *args: Any, **kwargs: Any) -> None:
        events.append("written")
        await write(self, *args, **kwargs)

    monkeypatch.setattr(aiohttp.client_reqrep.ClientRequest, "write_bytes", writing)
    record_parses(events, monkeypatch)

    def messages(name: str) -> Callable[[], list[dict[str, str]]]:
        def prepare() -> list[dict[str, str]]:
            events.append(f"prepare {name}")
            return [{"role": "user", "content": name}]

        return prepare

    async def call(name: str) -> Any:
        return await model_client.complete_json(
            "openai/slow-20", messages(name), SCHEMA,
            cache_key_parts={"call": name}, api_base=fake.url, api_key="sk-test",
        )  # fmt: skip

    await call("warm-up")  # a pooled connection: a first call also waits to connect
    events.clear()
    await asyncio.gather(call("a"), call("b"))
    assert events == ["prepare a", "written", "prepare b", "written", "parse", "parse"]
    assert fake.max_in_flight["slow-20"] == 1


async def test_a_server_limit_is_shared_by_the_models_it_serves(
    make: Build, fake_openai: FakeOpenAIServer
) -> None:
    fake = fake_openai  # its own server: hung calls of other tests would count as in flight
    model_client = make(concurrency=4, endpoint_concurrency=3)
    started = time.monotonic()
    await asyncio.gather(
        *(
            ask(model_client, fake, f"slow-100-{model}", cache_key_parts={"i": i})
            for model in "ab"
            for i in range(4)
        )
    )
    assert fake.max_in_flight_total == 3  # 8 calls, 4 per model allowed, 3 for the server
    assert time.monotonic() - started >= 0.3  # three rounds of 100 ms


async def test_waiting_for_a_server_slot_counts_against_the_deadline(
    make: Build, fake: FakeOpenAIServer
) -> None:
    model_client = make(concurrency=1, endpoint_concurrency=1)
    busy = asyncio.create_task(ask(model_client, fake, "slow-400-x"))
    # x holds the server's one slot once the server has it
    assert await wait_until_async(lambda: fake.requests["slow-400-x"] == 1, timeout=10)
    with pytest.raises(ModelTimeout):
        await ask(model_client, fake, "slow-400-y", deadline=time.monotonic() + 0.1)
    model_slot, server_slot = model_client._limits_for("openai/slow-400-y", fake.url)
    assert not model_slot.locked()  # y gave back the model slot it held while it queued
    assert fake.requests["slow-400-y"] == 0
    await busy
    assert not server_slot.locked()
    verdict, _ = await ask(model_client, fake, "slow-400-y")
    assert verdict["score"] == 0.8


async def test_cost_known_unknown_and_free(make: Build, fake: FakeOpenAIServer) -> None:
    _, priced = await ask(make(), fake, "gpt-4.1-mini")
    _, unknown = await ask(make(), fake, "no-such-model-xyz")
    _, free = await ask(make(), fake, "gpt-4.1-mini", free=True, cache_key_parts={"f": 1})
    assert priced.cost_usd > 0
    assert unknown.cost_usd == 0.0 and free.cost_usd == 0.0


async def test_openai_env_vars_are_honoured(
    make: Build, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_BASE", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    verdict, _ = await make().complete_json(
        "openai/env-judge", MESSAGES, SCHEMA, cache_key_parts={}, timeout=5
    )
    assert fake.requests["env-judge"] == 1 and verdict["score"] == 0.8


async def test_redis_cache_is_shared_between_clients(
    make: Build, fake: FakeOpenAIServer, redis_url: str
) -> None:
    first, second = make(cache=RedisCache(redis_url)), make(cache=RedisCache(redis_url))
    await ask(first, fake, "judge-r")
    _, usage = await ask(second, fake, "judge-r")
    assert usage.cache_hits == 1 and fake.requests["judge-r"] == 1
    await first.aclose()
    await second.aclose()


async def test_redis_outage_is_a_miss_not_a_failure(make: Build, fake: FakeOpenAIServer) -> None:
    model_client = make(cache=RedisCache("redis://127.0.0.1:1/0"))
    verdict, usage = await ask(model_client, fake, "judge-down")
    assert verdict["score"] == 0.8 and usage.judge_calls == 1


def test_get_client_is_shared_per_settings(redis_url: str) -> None:
    embedded = get_settings(cache_url=None, judge_concurrency=8)
    assert get_client(embedded) is get_client(get_settings(cache_url=None, judge_concurrency=8))
    assert isinstance(get_client(embedded).cache, MemoryCache)
    assert get_client(embedded).concurrency == 8
    assert get_client(embedded).endpoint_concurrency == 0  # off unless asked for
    shared = get_client(get_settings(cache_url=None, judge_concurrency=8, endpoint_concurrency=6))
    assert shared.endpoint_concurrency == 6 and shared is not get_client(embedded)
    assert get_client(embedded).transport == "lean"
    switched = get_client(
        get_settings(cache_url=None, judge_concurrency=8, openai_transport="litellm")
    )
    assert switched.transport == "litellm" and switched is not get_client(embedded)
    assert isinstance(get_client(get_settings(cache_url=redis_url)).cache, RedisCache)


def test_one_client_serves_many_event_loops(
    make: Build, fake: FakeOpenAIServer, redis_url: str
) -> None:
    """Workers may run a fresh loop per batch: limits and Redis clients follow the loop."""
    model_client = make(concurrency=1, cache=RedisCache(redis_url))

    async def batch(n: int) -> None:  # contention makes the semaphore bind to this loop
        await asyncio.gather(
            *(ask(model_client, fake, "loops", cache_key_parts={"n": n, "i": i}) for i in range(3))
        )

    for n in range(3):
        asyncio.run(batch(n))
    assert fake.requests["loops"] == 9
    assert len(model_client._limits) == 1  # closed loops are dropped, not kept alive
    # The lean transport's pooled sessions close with their loop (no sockets left open).
    pools = [sessions for _, sessions in model_client._lean._sessions.values()]
    assert len(pools) == (1 if model_client.transport == "lean" else 0)
    assert all(session.closed for pool in pools for session in pool.values())


async def test_hosted_vllm_spec_reaches_its_base_under_its_own_name(
    make: Build, fake: FakeOpenAIServer
) -> None:
    verdict, usage = await make().complete_json(
        "hosted_vllm/Org/judge-v", MESSAGES, SCHEMA, cache_key_parts={}, api_base=fake.url
    )
    assert verdict["score"] == 0.8 and usage.judge_calls == 1 and usage.cost_usd == 0.0
    body = fake.bodies[-1]
    assert body["model"] == "Org/judge-v" and body["messages"] == MESSAGES
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA


async def test_unreachable_server_is_retried_then_fails(make: Build) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(ModelCallError, match=r"(?i)connect") as caught:
        await make(max_retries=2).complete_json(
            "openai/x",
            MESSAGES,
            SCHEMA,
            cache_key_parts={},
            api_base=closed,
            api_key="sk",
            timeout=5,
        )
    assert not isinstance(caught.value, ModelTimeout) and caught.value.usage.judge_calls == 0
    assert time.monotonic() - started < 5


def test_lean_route_resolves_endpoints_as_litellm_does(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "HOSTED_VLLM_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    assert endpoint("anthropic/claude-sonnet-4", None, None) is None  # litellm's
    assert endpoint("hosted_vllm/Qwen/Qwen3-8B", None, None) is None  # no base: litellm's error
    vllm = endpoint("hosted_vllm/Qwen/Qwen3-8B", "http://gpu-1:8000/v1/", None)
    assert vllm is not None and vllm.url == "http://gpu-1:8000/v1/chat/completions"
    assert vllm.model == "Qwen/Qwen3-8B" and "Authorization" not in vllm.headers
    default = endpoint("openai/o3-mini", None, None)
    assert default is not None and default.url == "https://api.openai.com/v1/chat/completions"
    assert default.reasoning  # OpenAI's reasoning models take max_completion_tokens
    monkeypatch.setenv("OPENAI_API_BASE", "http://other:1/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy:9/v1")  # litellm prefers this one
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    proxied = endpoint("openai/o3-mini", None, None)
    assert proxied is not None and proxied.url == "http://proxy:9/v1/chat/completions"
    assert proxied.headers["Authorization"] == "Bearer sk-env" and not proxied.reasoning
    explicit = endpoint("openai/m", "http://h:1/v1", "sk-own")
    assert explicit is not None and explicit.headers["Authorization"] == "Bearer sk-own"
