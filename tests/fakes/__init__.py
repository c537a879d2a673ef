"""Test fakes, first-class: an OpenAI-compatible server with injectable faults and latency.

The main ``conftest.py`` can expose the fixture with ``from tests.fakes import fake_openai``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .openai_server import Behaviour, FakeOpenAIServer, Reply, fill, free_port

__all__ = [
    "Behaviour",
    "FakeOpenAIServer",
    "Reply",
    "fake",
    "fake_openai",
    "fill",
    "free_port",
    "server",
]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running fake server on a free 127.0.0.1 port; reach it via ``server.url``."""
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    """One fake server for a whole test module (import it with ``fake``)."""
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The module's fake server, reset (behaviours and counters) for each test."""
    server.reset()
    return server
