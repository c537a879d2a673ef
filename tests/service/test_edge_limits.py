"""Limits at the edge of a real ``judge-service serve``, probed with raw sockets: request
heads over JS_MAX_HEADER_KB get 431 without being buffered, slow heads and bodies lose
their connection, and pipelined requests behind an error are still answered."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Server, create_key, run_cli, service_env, wait_until

HEADER_TIMEOUT_S = 1  # short: tests wait them out (the settings allow any time > 0)
BODY_TIMEOUT_S = 1
MB = 1024 * 1024


def edge_env(database_url: str, **extra: str) -> dict[str, str]:
    return service_env(
        JS_DATABASE_URL=database_url,
        JS_HEADER_TIMEOUT_S=str(HEADER_TIMEOUT_S),
        JS_BODY_TIMEOUT_S=str(BODY_TIMEOUT_S),
        JS_DEFAULT_JUDGES="reference_match",
        **extra,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """One ``serve`` on SQLite (embedded) for the module (starting one takes a while on a
    busy machine), and an admin key."""
    tmp_path = tmp_path_factory.mktemp("edge")
    env = edge_env(f"sqlite:///{tmp_path / 'edge.db'}")
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    key = create_key("admin", env=env, cwd=tmp_path)
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log", timeout=180)
    try:
        yield server, key
    finally:
        server.kill()


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def read_until_closed(sock: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    sock.settimeout(timeout)
    start = time.monotonic()
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def send_huge_header(server: Server, size: int) -> tuple[bytes, int]:
    """Send a request whose one header is ``size`` bytes, stopping when the server stops
    reading; the answer, and how many header bytes went out before that."""
    sock = connect(server)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
    chunk = b"a" * MB
    sent = 0
    try:
        while sent < size:
            sock.sendall(chunk)
            sent += len(chunk)
        sock.sendall(b"\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    answer, _ = read_until_closed(sock, 10)
    sock.close()
    return answer, sent


def test_a_1_mb_header_gets_431_with_a_json_error(served):
    server, _ = served
    answer, _ = send_huge_header(server, MB)
    assert status_of(answer) == 431, answer[:200]
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert error["code"] == "headers_too_large"
    assert error["detail"] == {"max_bytes": 64 * 1024}


def test_a_200_mb_header_is_refused_early_and_memory_stays_flat(served):
    server, _ = served
    before = rss_kib(server.proc.pid)
    answer, sent = send_huge_header(server, 200 * MB)
    after = rss_kib(server.proc.pid)
    assert answer and status_of(answer) == 431
    # The server closed long before 200 MB went out (what was sent sits in socket buffers).
    assert sent < 64 * MB, sent
    assert after - before < 30 * 1024, (before, after)


def test_headers_under_the_limit_are_served(served):
    server, key = served
    sock = connect(server)
    filler = "b" * (48 * 1024)
    sock.sendall(
        f"GET /v1/rubrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
        f"X-Filler: {filler}\r\nConnection: close\r\n\r\n".encode()
    )
    answer, _ = read_until_closed(sock, 10)
    assert status_of(answer) == 200, answer[:300]


def test_a_half_sent_body_gets_408_and_the_connection_is_closed(served):
    server, key = served
    sock = connect(server)
    sock.sendall(
        f"POST /v1/rewards HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode()
        + b'{"samples": ['
    )
    answer, took = read_until_closed(sock, BODY_TIMEOUT_S + 10)
    assert status_of(answer) == 408, answer[:300]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_timeout"
    assert BODY_TIMEOUT_S - 0.5 < took < BODY_TIMEOUT_S + 5


@pytest.mark.parametrize("sent", [b"", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"])
def test_a_silent_or_slow_head_loses_its_connection(served, sent):
    server, _ = served
    sock = connect(server)
    sock.sendall(sent)
    answer, took = read_until_closed(sock, HEADER_TIMEOUT_S + 10)
    assert answer == b""
    assert HEADER_TIMEOUT_S - 0.5 < took < HEADER_TIMEOUT_S + 5


def test_a_slow_head_after_an_answer_loses_its_connection(served):
    """The head timer restarts after each answer: keep-alive is no way around it."""
    server, _ = served
    sock = connect(server)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    # the answer is in (peeked at, left for read_until_closed): the head timer starts again
    assert wait_until(lambda: b"HTTP/1.1 200" in sock.recv(65536, socket.MSG_PEEK), 10)
    start = time.monotonic()
    # A header line every quarter of the timeout, for longer than the bound below: a timer
    # that restarted with each line would keep the connection open past it.
    interval = HEADER_TIMEOUT_S / 4
    for line in range(int((HEADER_TIMEOUT_S + 5) / interval) + 1):
        try:
            sock.sendall(b"X-Slow: 1\r\n" if line else b"GET /healthz HTTP/1.1\r\n")
        except (BrokenPipeError, ConnectionResetError):
            break
        time.sleep(interval)
    answer, _ = read_until_closed(sock, 10)
    assert answer.count(b"HTTP/1.1 200") == 1  # the first request only
    assert time.monotonic() - start < HEADER_TIMEOUT_S + 5


def test_pipelined_requests_behind_errors_are_answered(served):
    """Each error answer (here 400, 422, 404) leaves the connection open for the next."""
    server, key = served
    auth = f"Authorization: Bearer {key}\r\n"
    deep = b"[" * 1000
    requests = [
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        (
            f"POST /get_reward?run_id= HTTP/1.1\r\nHost: x\r\n{auth}"
            "Content-Type: application/json\r\nContent-Length: 15\r\n\r\n"
        ).encode()
        + b'{"query":["x"]}',
        (
            f"POST /v1/rewards HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {len(deep)}\r\n\r\n"
        ).encode()
        + deep,
        f"GET /v1/review/2147483648 HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode(),
        f"GET /v1/rewards/nope HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode(),
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ]
    sock = connect(server)
    sock.sendall(b"".join(requests))
    answer, _ = read_until_closed(sock, 30)
    statuses = [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)]
    assert statuses == [200, 422, 400, 422, 404, 200], answer[:2000]


def test_serve_with_workers_applies_the_same_limits(tmp_path, postgres_url, redis_url):
    """``serve --workers 2`` hands the limits to each process."""
    env = edge_env(
        postgres_url.replace("postgresql://", "postgresql+psycopg://"), JS_BROKER_URL=redis_url
    )
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log", workers=2, timeout=180)
    try:
        for _ in range(4):  # connections land on either process
            answer, _ = send_huge_header(server, MB)
            assert status_of(answer) == 431, answer[:200]
        sock = connect(server)
        answer, took = read_until_closed(sock, HEADER_TIMEOUT_S + 10)
        assert answer == b"" and took < HEADER_TIMEOUT_S + 5
    finally:
        server.kill()
