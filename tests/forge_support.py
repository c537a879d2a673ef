"""Helpers for the forge API tests: upload, wait for a job, scripted fake models."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from fastapi.testclient import TestClient

from tests.fakes import FakeOpenAIServer

Client = TestClient | httpx.Client
JSONL = {"content-type": "application/x-ndjson"}


def spec(fake: FakeOpenAIServer, model: str) -> dict[str, Any]:
    return {"name": f"openai/{model}", "api_base": fake.url}


def upload(
    client: Client, headers: dict, kind: str, text: str, expect: int = 202, **options: Any
) -> dict:
    params: list[tuple[str, str]] = []
    for name, value in options.items():
        for item in value if isinstance(value, list) else [value]:
            params.append((name, json.dumps(item) if isinstance(item, dict) else str(item)))
    response = client.post(
        f"/v1/forge/{kind}", content=text, params=params, headers={**headers, **JSONL}
    )
    assert response.status_code == expect, response.text
    return response.json()


def wait_job(client: Client, headers: dict, job_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/forge/jobs/{job_id}", headers=headers).json()
        if job["status"] in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def forge(client: Client, headers: dict, kind: str, text: str, **options: Any) -> dict:
    job = wait_job(client, headers, upload(client, headers, kind, text, **options)["id"])
    assert job["status"] == "done", job
    return job


def script_documents(
    fake: FakeOpenAIServer,
    proposals: dict[str, dict[str, str]],
    verifier: dict[str, list[str]],
    solver: dict[str, list[str]],
) -> dict[str, Any]:
    """Generator, verifier and solver models answering per chunk or question (``match``);
    the options that point a documents job at them."""
    fake.configure("gen", replies=[{"match": m, "contents": [p]} for m, p in proposals.items()])
    fake.configure(
        "ver",
        replies=[{"match": m, "contents": [{"answer": a} for a in v]} for m, v in verifier.items()],
    )
    fake.configure(
        "sol",
        replies=[{"match": m, "contents": [{"answer": a} for a in v]} for m, v in solver.items()],
    )
    return {
        "generator": spec(fake, "gen"),
        "verifiers": [spec(fake, "ver")],
        "solver": spec(fake, "sol"),
    }
