"""Judge calls per second and CPU per call: bare HTTP clients, the SDKs, and the service.

Everything calls one OpenAI-compatible fake (tests/fakes, 50 ms latency by default), 1,024
calls at 64 in flight, in one run:

- bare ``aiohttp`` and ``httpx`` POSTs (the floor), the ``openai`` SDK, ``litellm.acompletion``,
  and the service's ``ModelClient`` alone on each transport, from this process (CPU: this
  process's user+sys over the calls; its start-up heap frozen, as the service freezes its own);
- the service (``judge-service serve``), embedded (SQLite, in-process executor), one
  ``openai/`` judge per sample and no detectors, on each transport (``JS_OPENAI_TRANSPORT``);
- the service with Celery (PostgreSQL, Redis db 11) at 1 and 2 worker processes
  (``judge-service worker --concurrency N``): the calls go as 8 batches of 128 at once, and each
  batch's judge gets 64 / N calls in flight, so 64 are in flight in all;
- a three-judge panel with the default detectors, embedded, lean.

CPU per call is the service's CPU (user+sys of the API process and of every worker process,
from psutil, over the run) divided by the judge calls it made.

    .venv/bin/python bench/judge_calls.py
    .venv/bin/python bench/judge_calls.py --calls 4096 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
import httpx
import litellm
import openai
import psutil
import pydantic_core
from rich.console import Console
from rich.table import Table

from bench.common import Child, cli, fake_judge_server, service_env, start_service, start_worker
from bench.judge_overhead import SCHEMA, pg_database
from judge_service.judging.client import ModelClient

IN_FLIGHT = 64
FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
}
Row = tuple[str, int, float, float]  # name, calls, seconds, CPU seconds
Call = Callable[[int], Awaitable[Any]]
Close = Callable[[], Awaitable[Any]]


def messages(i: int, run: str) -> list[dict[str, str]]:
    text = f"Grade answer {i} of run {run}: the budget grew {i % 7}%."
    return [{"role": "user", "content": text}]


async def gated(n: int, one: Callable[[int], Awaitable[Any]]) -> None:
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def call(i: int) -> None:
        async with gate:
            await one(i)

    await asyncio.gather(*(call(i) for i in range(n)))


def in_process(name: str, n: int, make: Callable[[], tuple[Call, Close]]) -> Row:
    """``n`` calls of ``make()``'s coroutine at IN_FLIGHT, after a warm-up of 64."""

    async def run() -> tuple[float, float]:
        one, close = make()
        await gated(IN_FLIGHT, one)  # connections, imports
        cpu, started = time.process_time(), time.perf_counter()
        await gated(n, one)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        await close()
        return seconds, cpu

    seconds, cpu = asyncio.run(run())
    return name, n, seconds, cpu


def bare_aiohttp(api_base: str) -> tuple[Call, Close]:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    url, run = f"{api_base}/chat/completions", uuid.uuid4().hex
    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}

    async def one(i: int) -> Any:
        body = {"model": "bench-judge", "messages": messages(i, run), "response_format": FORMAT}
        async with session.post(url, data=pydantic_core.to_json(body), headers=headers) as r:
            return pydantic_core.from_json(await r.read())["choices"][0]["message"]["content"]

    return one, session.close


def bare_httpx(api_base: str) -> tuple[Call, Close]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=IN_FLIGHT)
    client = httpx.AsyncClient(limits=limits, headers={"Authorization": "Bearer sk-bench"})
    url, run = f"{api_base}/chat/completions", uuid.uuid4().hex

    async def one(i: int) -> Any:
        body = {"model": "bench-judge", "messages": messages(i, run), "response_format": FORMAT}
        response = await client.post(
            url, content=pydantic_core.to_json(body), headers={"Content-Type": "application/json"}
        )
        return pydantic_core.from_json(response.content)["choices"][0]["message"]["content"]

    return one, client.aclose


def openai_sdk(api_base: str) -> tuple[Call, Close]:
    client = openai.AsyncOpenAI(base_url=api_base, api_key="sk-bench", max_retries=0)
    run = uuid.uuid4().hex

    async def one(i: int) -> Any:
        reply = await client.chat.completions.create(
            model="bench-judge",
            messages=messages(i, run),
            response_format=FORMAT,  # type: ignore[arg-type]
        )
        return reply.choices[0].message.content

    return one, client.close


def litellm_call(api_base: str) -> tuple[Call, Close]:
    run = uuid.uuid4().hex

    async def one(i: int) -> Any:
        reply = await litellm.acompletion(
            model="openai/bench-judge",
            api_base=api_base,
            api_key="sk-bench",
            messages=messages(i, run),
            response_format=FORMAT,
        )
        return reply.choices[0].message.content

    async def nothing() -> None:
        """litellm keeps its own clients."""

    return one, nothing


def model_client(api_base: str, transport: str) -> tuple[Call, Close]:
    """``ModelClient.complete_json`` alone: the transport plus retries, limits, cache, parsing."""
    client = ModelClient(transport=transport)  # type: ignore[arg-type]
    run = uuid.uuid4().hex

    async def one(i: int) -> Any:
        return await client.complete_json(
            "openai/bench-judge",
            messages(i, run),
            SCHEMA,
            cache_key_parts={"run": run, "i": i},
            api_base=api_base,
            api_key="sk-bench",
        )

    return one, client.aclose


def samples(n: int) -> list[dict[str, str]]:
    run = uuid.uuid4().hex  # fresh content each run: no cache hit
    return [
        {"id": f"s{i}", "prompt": f"Summarise document {i} of {run}.",
         "completion": f"Document {i} says the budget grew {i % 7}% ({run})."}
        for i in range(n)
    ]  # fmt: skip


def service_cpu(children: list[Child]) -> float:
    """User+sys seconds of the service's processes (and their children, e.g. prefork)."""
    total = 0.0
    for child in children:
        try:
            root = psutil.Process(child.proc.pid)
            for proc in [root, *root.children(recursive=True)]:
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def batch_bodies(judges: list[Any], n: int, batches: int) -> list[dict[str, Any]]:
    """``n`` fresh samples as ``batches`` request bodies."""
    return [
        {"samples": samples(n // batches), "judges": judges, "timeout_s": 900}
        for _ in range(batches)
    ]


def open_clients(url: str, key: str, count: int) -> list[httpx.Client]:
    """One HTTP client per concurrent batch, made before the clock starts: making an
    ``httpx.Client`` loads its TLS certificates (20-30 ms here), which is the bench's own
    set-up, not the service's work (``httpx.post`` would pay it on every call)."""
    headers = {"Authorization": f"Bearer {key}"}
    return [httpx.Client(base_url=url, headers=headers, timeout=1000) for _ in range(count)]


def post_batches(clients: list[httpx.Client], bodies: list[dict[str, Any]]) -> int:
    """Send the bodies at once, one per client; returns the judge calls the answers report."""

    def send(client: httpx.Client, body: dict[str, Any]) -> int:
        response = client.post("/v1/rewards", json=body)
        assert response.status_code == 200, response.text[:500]
        answer = response.json()
        invalid = [r for r in answer["results"] if not r["valid"]]
        assert not invalid, f"the bench judge failed: {invalid[0]}"
        return int(answer["usage"]["judge_calls"])

    with ThreadPoolExecutor(len(bodies)) as pool:
        return sum(pool.map(send, clients, bodies))


def through_service(
    name: str, env: dict[str, str], api_base: str, n: int, *, workers: int = 0, panel: int = 1
) -> Row:
    """The service in child processes (``workers`` > 0: Celery with that many processes)."""
    judges = [
        {"name": f"openai/bench-judge-{j}", "api_base": api_base, "api_key": "sk-bench"}
        for j in range(panel)
    ]
    if workers:  # the schema first: a worker's heartbeats go to the database from its start
        cli("db", "upgrade", env=env)
    children = [start_worker(env, concurrency=workers)] if workers else []
    server, url, key = start_service(env)
    children.append(server)
    batches = 8 if workers else 1
    clients = open_clients(url, key, batches)
    try:
        post_batches(clients, batch_bodies(judges, 64 * batches, batches))  # warm-up
        bodies = batch_bodies(judges, n, batches)
        cpu, started = service_cpu(children), time.perf_counter()
        calls = post_batches(clients, bodies)
        return name, calls, time.perf_counter() - started, service_cpu(children) - cpu
    finally:
        for client in clients:
            client.close()
        for child in children:
            child.stop()
        if workers:
            report_redispatches(children[0])


def report_redispatches(worker: Child) -> None:
    """How often the worker's sweeper re-sent a batch, and how many messages it dropped
    (a batch done or leased already): both should be 0 when nothing was lost."""
    log = Path(worker.log.name).read_text(errors="replace")
    resent, dropped = log.count("re-dispatching batch"), log.count("dropped:")
    print(f"  worker log: {resent} batches re-dispatched, {dropped} messages dropped", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1024)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1, help="best of N rounds per row")
    parser.add_argument("--skip-celery", action="store_true")
    parser.add_argument(
        "--only", action="append", default=[], help="rows whose name holds this (the floor stays)"
    )
    args = parser.parse_args()
    n = args.calls
    # The heap imported so far (litellm's tables) out of the collector's reach, as the service
    # does at start: else full collections rescan it during the in-process rows.
    gc.collect()
    gc.freeze()
    fake, api_base = fake_judge_server(args.latency_ms)
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"js-calls-{uuid.uuid4().hex[:6]}"
    tmp.mkdir(parents=True)

    def embedded(transport: str, **extra: str) -> dict[str, str]:
        db = f"sqlite:///{tmp / f'{uuid.uuid4().hex[:6]}.db'}"
        return service_env(
            JS_DATABASE_URL=db, JS_OPENAI_TRANSPORT=transport, JS_DETECTORS="none", **extra
        )

    def celery(workers: int) -> dict[str, str]:
        return service_env(
            JS_DATABASE_URL=pg_database(),
            JS_BROKER_URL="redis://127.0.0.1:6379/11",
            JS_OPENAI_TRANSPORT="lean",
            JS_DETECTORS="none",
            JS_JUDGE_CONCURRENCY=str(IN_FLIGHT // workers),
        )

    floor = "bare aiohttp POST (the floor)"
    measures: list[tuple[str, Callable[[str], Row]]] = [
        (floor, lambda name: in_process(name, n, lambda: bare_aiohttp(api_base))),
        ("bare httpx POST", lambda name: in_process(name, n, lambda: bare_httpx(api_base))),
        ("openai SDK", lambda name: in_process(name, n, lambda: openai_sdk(api_base))),
        ("litellm.acompletion", lambda name: in_process(name, n, lambda: litellm_call(api_base))),
        (
            "ModelClient, lean",
            lambda name: in_process(name, n, lambda: model_client(api_base, "lean")),
        ),
        (
            "ModelClient, litellm",
            lambda name: in_process(name, n, lambda: model_client(api_base, "litellm")),
        ),
        (
            "service embedded, lean",
            lambda name: through_service(name, embedded("lean"), api_base, n),
        ),
        (
            "service embedded, litellm",
            lambda name: through_service(name, embedded("litellm"), api_base, n),
        ),
    ]
    if not args.skip_celery:
        for workers in (1, 2):
            measures.append(
                (
                    f"service, Celery, {workers} worker process{'es' if workers > 1 else ''}, lean",
                    lambda name, w=workers: through_service(
                        name, celery(w), api_base, n, workers=w
                    ),
                )
            )
    measures.append(
        (
            "service embedded, lean, 3-judge panel + default detectors",
            lambda name: through_service(
                name, _with_detectors(embedded("lean")), api_base, n, panel=3
            ),
        )
    )
    chosen = [
        (name, measure)
        for name, measure in measures
        if name == floor or not args.only or any(part in name for part in args.only)
    ]
    best: dict[str, Row] = {}
    failed: dict[str, str] = {}  # rows that raised in a round: why, the last time
    try:
        for _ in range(args.rounds):
            for name, measure in chosen:
                try:
                    row = measure(name)
                except Exception as exc:  # one row's failure (a reset connection) is reported;
                    # the others still run: the run compares them side by side
                    failed[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
                    print(f"{name}: FAILED, {failed[name]}", flush=True)
                    continue
                print(f"{row[0]}: {row[1]} calls, {row[1] / row[2]:,.0f} calls/s, "
                      f"{1000 * row[3] / row[1]:.2f} ms CPU per call", flush=True)  # fmt: skip
                old = best.get(row[0])
                if old is None or row[1] / row[2] > old[1] / old[2]:
                    best[row[0]] = row
    finally:
        fake.stop()
    if floor not in best:
        raise SystemExit(f"the floor failed in every round ({failed[floor]}): no ratios")
    floor_row = best[floor]
    # CPU as a multiple of the floor's too: this machine's speed drifts by 2x between runs,
    # and the multiple is what stays put (the absolute goal is met or missed with the machine).
    table = Table("path", "calls", "calls/s", "x aiohttp", "CPU ms per call", "CPU x aiohttp")
    floor_cpu = floor_row[3] / floor_row[1]
    for name, calls, seconds, cpu in best.values():
        rate = calls / seconds
        table.add_row(
            name, str(calls), f"{rate:,.0f}", f"{rate / (floor_row[1] / floor_row[2]):.2f}",
            f"{1000 * cpu / calls:.2f}", f"{cpu / calls / floor_cpu:.2f}",
        )  # fmt: skip
    for name, why in failed.items():
        if name not in best:
            table.add_row(name, "0", f"failed ({why.split(':')[0]})", "-", "-", "-")
    bound = IN_FLIGHT / (args.latency_ms / 1000)
    Console().print(table)
    print(f"latency bound: {bound:,.0f} calls/s ({IN_FLIGHT} in flight, {args.latency_ms} ms)")


def _with_detectors(env: dict[str, str]) -> dict[str, str]:
    """The same environment with the default detectors (JS_DETECTORS unset)."""
    return {k: v for k, v in env.items() if k != "JS_DETECTORS"}


if __name__ == "__main__":
    main()
