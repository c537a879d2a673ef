"""How much throughput the whole service keeps, against direct litellm calls.

Both sides call the same OpenAI-compatible fake judge (50 ms injected latency) at the
same concurrency. The baseline is ``litellm.acompletion`` with the same JSON-schema
response format, from this process; the service is ``judge-service serve`` in its own
process, embedded (SQLite, in-process executor) and with Celery (Redis, PostgreSQL, one
worker). Ratio = service throughput / direct throughput (1.0 = no overhead).

    .venv/bin/python bench/judge_overhead.py            # 256 and 4096 samples, judging only
    .venv/bin/python bench/judge_overhead.py --audit    # with the default hindsight audit on
    .venv/bin/python bench/judge_overhead.py --sizes 256
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import litellm
import psycopg
from rich.console import Console
from rich.table import Table

from bench.common import fake_judge_server, service_env, start_service, start_worker

CONCURRENCY = 64
SCHEMA = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["rationale", "score"],
    "additionalProperties": False,
}


def samples(n: int) -> list[dict]:
    run = uuid.uuid4().hex  # fresh content each run, so no cache helps either side
    return [
        {
            "id": f"s{i}",
            "prompt": f"Summarise document {i} of {run}.",
            "completion": f"Document {i} says the budget grew {i % 7}% ({run}).",
        }
        for i in range(n)
    ]


async def direct(n: int, api_base: str) -> float:
    """Seconds for ``n`` direct litellm calls at CONCURRENCY."""
    gate = asyncio.Semaphore(CONCURRENCY)
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
    }

    async def one(sample: dict) -> None:
        async with gate:
            await litellm.acompletion(
                model="openai/bench-judge",
                api_base=api_base,
                api_key="sk-bench",
                messages=[{"role": "user", "content": sample["prompt"] + sample["completion"]}],
                response_format=fmt,
                temperature=0,
                max_tokens=256,
            )

    batch = samples(n)
    started = time.perf_counter()
    await asyncio.gather(*(one(s) for s in batch))
    return time.perf_counter() - started


def through_service(n: int, url: str, key: str, api_base: str) -> float:
    judge = {"name": "openai/bench-judge", "api_base": api_base}
    body = {"samples": samples(n), "judges": [judge], "timeout_s": 900}
    started = time.perf_counter()
    response = httpx.post(
        f"{url}/v1/rewards", json=body, timeout=1000, headers={"Authorization": f"Bearer {key}"}
    )
    elapsed = time.perf_counter() - started
    results = response.json()["results"]
    assert response.status_code == 200 and len(results) == n
    assert all(r["valid"] for r in results), "the bench judge failed"
    return elapsed


def pg_database() -> str:
    name = f"js_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(
        "postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True
    ) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://postgres@127.0.0.1:5432/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 4096])
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument(
        "--audit",
        action="store_true",
        help="keep the default hindsight audit on (it adds its CPU per sample)",
    )
    args = parser.parse_args()
    audit = {} if args.audit else {"JS_DETECTORS": "none"}
    fake, api_base = fake_judge_server(args.latency_ms)
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"js-bench-{uuid.uuid4().hex[:6]}"
    tmp.mkdir(parents=True)
    modes = {
        "embedded": service_env(JS_DATABASE_URL=f"sqlite:///{tmp / 'bench.db'}", **audit),
        "celery": service_env(
            JS_DATABASE_URL=pg_database(),
            JS_BROKER_URL="redis://127.0.0.1:6379/11",
            JS_ALLOW_FREE_ENDPOINTS="true",  # the fake judge server is a free api_base
            **audit,
        ),
    }
    table = Table("samples", "mode", "direct s", "service s", "direct/s", "service/s", "ratio")
    try:
        asyncio.run(direct(32, api_base))  # warm litellm's imports and connection pool
        for mode, env in modes.items():
            children = [start_worker(env)] if mode == "celery" else []
            server, url, key = start_service(env)
            children.append(server)
            try:
                through_service(32, url, key, api_base)  # warm-up
                for n in args.sizes:
                    base = asyncio.run(direct(n, api_base))
                    service = through_service(n, url, key, api_base)
                    table.add_row(
                        str(n),
                        mode,
                        f"{base:.2f}",
                        f"{service:.2f}",
                        f"{n / base:.0f}",
                        f"{n / service:.0f}",
                        f"{base / service:.2f}",
                    )
            finally:
                for child in children:
                    child.stop()
    finally:
        fake.stop()
    Console().print(table)


if __name__ == "__main__":
    main()
