"""Helpers shared by the rubric, review and agreement tests: a rubric, judge specs, polling."""

from __future__ import annotations

import time
from typing import Any

import httpx
from fastapi.testclient import TestClient

from tests.fakes import FakeOpenAIServer

RUBRIC: dict[str, Any] = {
    "name": "refund-desk",
    "description": "A support agent handles refund requests.",
    "criteria": [
        {"id": "looks-up-order", "text": "Did the agent look up the order?", "weight": 2},
        {"id": "states-timeline", "text": "Did it say when the refund arrives?", "weight": 1},
        {
            "id": "promises-cash",
            "text": "Did it promise cash for a store-credit item?",
            "weight": -2,
            "tags": ["pitfall"],
        },
    ],
}

Client = TestClient | httpx.Client


def llm_judge(fake: FakeOpenAIServer, model: str = "rubric-judge") -> dict[str, Any]:
    """An LLM judge spec that reaches the fake OpenAI-compatible server like a real one."""
    return {"name": f"openai/{model}", "api_base": fake.url}


def samples(n: int, *, prefix: str = "s", group: str | None = "g1") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}{i}",
            "group_id": group,
            "prompt": "I want a refund for order 1234, it arrived broken.",
            "completion": [
                {"role": "assistant", "content": f"Sorry about that (variant {i})."},
                {"role": "assistant", "content": "You will get your money back soon."},
            ],
        }
        for i in range(n)
    ]


def score(client: Client, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = client.post("/v1/rewards", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def wait_for_job(
    client: Client, headers: dict[str, str], rubric: str, job_id: str, timeout: float = 60
) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/rubrics/{rubric}/mine/{job_id}", headers=headers).json()
        if job["status"] in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def mine(
    client: Client, headers: dict[str, str], rubric: str, timeout: float = 60, **body: Any
) -> dict[str, Any]:
    """Queue mining and wait for it to finish; the job must succeed."""
    queued = client.post(f"/v1/rubrics/{rubric}/mine", json=body, headers=headers)
    assert queued.status_code == 202, queued.text
    job = wait_for_job(client, headers, rubric, queued.json()["id"], timeout)
    assert job["status"] == "done", job
    return job
