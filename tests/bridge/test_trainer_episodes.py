"""Trainers driving a world's episodes through a real ``serve``: the episode client (reset,
step, state, its retries), the verifiers multi-turn environment played by a scripted model,
the TRL environment's tools, a real GRPOTrainer run (2 CPU steps of a tiny model) whose
episodes and reward batches the service stores under the run id, and one with ECHO."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.judging.local_model import default_model_path
from judge_service.traces.conversation import Trace, content_text, parse_traces
from judge_service.traces.goals import user_words
from tests.forge_support import forge
from tests.helpers import Server, create_key, run_cli, service_env, wait_until
from trainer_bridge import RewardConnectionError, RewardServiceError
from trainer_bridge.episodes import AsyncEpisodeClient, EpisodeClient, EpisodeEnded, reward_of

ROOT = Path(__file__).resolve().parents[2]
RETAIL = ROOT / "data" / "retail"
#: Three goals with 4-5 runs each whose writes the world learns (13 traces).
GOALS = ("task-0009", "task-0018", "task-0023")
#: What a policy that does nothing and claims success says.
CLAIM = "All done: your request has been completed."


def goal_traces() -> str:
    truth = {
        r["trace_id"]: r["goal_id"]
        for r in map(json.loads, (RETAIL / "truth.jsonl").read_text().splitlines())
    }
    lines = (RETAIL / "traces.jsonl").read_text().splitlines()
    return "".join(f"{line}\n" for line in lines if truth[json.loads(line)["id"]] in GOALS)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An embedded ``serve``, a world built over HTTP from a forge job of the goals' traces,
    its trace tasks and a trainer key."""
    home = tmp_path_factory.mktemp("episodes")
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{home / 'episodes.db'}",
        JS_FORGE_EMBEDDINGS="tfidf",
        JS_LOCAL_MODEL_URL="http://127.0.0.1:9/v1",  # no local judge to build or call
    )
    run_cli("db", "upgrade", env=env, cwd=home)
    trainer, reviewer = (create_key(role, env=env, cwd=home) for role in ("trainer", "reviewer"))
    server = Server(env=env, cwd=home, log=home / "serve.log")
    headers = {"Authorization": f"Bearer {reviewer}"}
    text = goal_traces()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            job = forge(http, headers, "traces", text, mine="false")
            built = http.post("/v1/worlds", json={"jobs": [job["id"]]}, headers=headers)
            assert built.status_code == 202, built.text
            world_id = built.json()["id"]
            done = wait_until(
                lambda: (
                    (w := http.get(f"/v1/worlds/{world_id}", headers=headers).json())["status"]
                    in ("done", "failed")
                    and w
                ),
                timeout=120,
            )
            assert done["status"] == "done", done
            listed = http.get("/v1/tasks", params={"job_id": job["id"]}, headers=headers).json()
        tasks = [t for t in listed["tasks"] if t["kind"] == "trace" and t["end_state"]]
        assert len(tasks) == len(GOALS), listed
        yield {
            "url": server.url,
            "key": trainer,
            "db": home / "episodes.db",
            "home": home,
            "world_id": world_id,
            "tasks": tasks,
            "traces": {t.id: t for t in parse_traces(text)},
        }
    finally:
        server.kill()


def traced_actions(opening: str, traces: dict[str, Trace]) -> list[dict[str, Any]]:
    """A policy that does what the traced agent did: the assistant messages that followed
    the user's opening turn in the run whose user the episode replays."""
    said = user_words(opening.strip())
    for trace in traces.values():
        for index, message in enumerate(trace.messages):
            if message.get("role") != "user":
                continue
            if user_words(content_text(message.get("content"))) == said:
                return [
                    {k: v for k, v in m.items() if k in ("role", "content", "tool_calls")}
                    for m in trace.messages[index + 1 :]
                    if m.get("role") == "assistant"
                ]
    raise AssertionError(f"no traced run opens with {opening!r}")


def loaded(value: Any) -> Any:
    """A state column as verifiers' output gives it (JSON text or the value)."""
    return json.loads(value) if isinstance(value, str) else value


def rows(db: Path, sql: str, *args: Any) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(sql, args).fetchall()


# --- the client --------------------------------------------------------------------------


def test_the_client_resets_steps_and_reads_an_episode(world):
    task = world["tasks"][0]
    with EpisodeClient(world["url"], world["key"]) as client:
        start = client.reset(world["world_id"], task["id"], seed=0, run_id="client", step=7)
        assert [m["role"] for m in start.messages] == ["system", "user"] and start.tools
        actions = traced_actions(start.messages[-1]["content"], world["traces"])
        call = next(a for a in actions if a.get("tool_calls"))
        stepped = client.step(start.episode_id, call)
        assert not stepped.done and stepped.reward is None and not stepped.valid
        assert [m["role"] for m in stepped.messages] == ["tool"] * len(call["tool_calls"])
        held = client.state(start.episode_id)
        assert held["status"] == "open" and held["run_id"] == "client" and held["step"] == 7
        assert len(held["answers"]) == len(call["tool_calls"]) and held["turns"] == 1

        ended = client.step(start.episode_id, {"role": "assistant", "content": CLAIM}, end=True)
        verdict = ended.result["verdict"]
        assert ended.done and ended.valid and verdict["reached"] is False and verdict["diff"]
        assert ended.reward == 0.0 and ended.sample["id"] == start.episode_id
        with pytest.raises(EpisodeEnded) as again:
            client.step(start.episode_id, {"role": "assistant", "content": "hello?"})
        assert again.value.status == 409
        with pytest.raises(RewardServiceError) as missing:
            client.state("nope")
        assert missing.value.status == 404 and not isinstance(missing.value, EpisodeEnded)
        with pytest.raises(RewardServiceError) as unknown:
            client.reset(world["world_id"], "nope")
        assert unknown.value.status == 422 and "task_id" in unknown.value.message

    async def read() -> dict[str, Any]:
        async with AsyncEpisodeClient(world["url"], world["key"]) as client:
            return await client.state(start.episode_id)

    stored = asyncio.run(read())
    assert stored["status"] == "done" and stored["result"] == ended.result
    with pytest.raises(RewardServiceError) as unauthorised:
        EpisodeClient(world["url"], "js_wrong").state(start.episode_id)
    assert unauthorised.value.status == 401


def mock(handler: Any) -> AsyncEpisodeClient:
    return AsyncEpisodeClient("http://svc", backoff_s=0.01, transport=httpx.MockTransport(handler))


def _answers(*answers: httpx.Response | Exception):
    """A MockTransport handler giving ``answers`` in order, and the requests it saw."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers[min(len(seen), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler, seen


STEPPED = httpx.Response(200, json={"observation": {"messages": []}, "done": False})


def test_a_step_is_sent_again_only_when_the_service_cannot_have_acted_on_it():
    """Refused (503 with Retry-After, 429) or never connected: sent again. The answer lost
    on the way back: not sent again (it would act twice), and the error says so."""
    busy = httpx.Response(503, headers={"Retry-After": "0"}, json={"error": {"code": "x"}})
    limited = httpx.Response(429, json={"error": {"code": "rate_limited", "message": "x"}})
    handler, seen = _answers(busy, httpx.ConnectError("refused"), limited, STEPPED)
    client = AsyncEpisodeClient(
        "http://svc", "k", retries=2, backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    stepped = asyncio.run(client.step("e1", {"content": "hi"}))
    assert stepped.done is False and len(seen) == 4
    assert seen[0].headers["authorization"] == "Bearer k"
    assert json.loads(seen[0].content) == {"action": {"content": "hi"}}

    handler, seen = _answers(httpx.ReadError("lost"), STEPPED)
    client = AsyncEpisodeClient(
        "http://svc", backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    with pytest.raises(RewardConnectionError, match="not sent again"):
        asyncio.run(client.step("e1", {"content": "hi"}, end=True))
    assert len(seen) == 1

    # refused after acting on it: the next try finds the episode ended, the stored end is it
    result = {"verdict": {"reward": 1.0}, "sample": {"valid": True, "reward": 0.5}}
    ended = httpx.Response(
        409,
        json={"error": {"code": "conflict", "message": "is done", "detail": {"status": "done"}}},
    )
    stored = httpx.Response(200, json={"id": "e1", "status": "done", "result": result})
    handler, seen = _answers(busy, ended, stored)
    stepped = asyncio.run(mock(handler).step("e1", {"content": "bye"}, end=True))
    assert (stepped.done, stepped.reward, stepped.result) == (True, 0.5, result)
    handler, seen = _answers(ended)
    with pytest.raises(EpisodeEnded):
        asyncio.run(mock(handler).step("e1", {"content": "bye"}))
    assert len(seen) == 1

    bad_gateway = httpx.Response(502, json={"error": {"code": "bad_gateway", "message": "x"}})
    handler, seen = _answers(bad_gateway, STEPPED)
    client = AsyncEpisodeClient(
        "http://svc", backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    with pytest.raises(RewardServiceError) as failed:
        asyncio.run(client.step("e1", {"content": "hi"}))
    assert failed.value.status == 502 and len(seen) == 1
    # a read is retried like rewards: a 502, a lost answer, then the state
    state = httpx.Response(200, json={"id": "e1", "status": "open"})
    handler, seen = _answers(bad_gateway, httpx.ReadError("lost"), state)
    client = AsyncEpisodeClient(
        "http://svc", backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    assert asyncio.run(client.state("e1"))["status"] == "open" and len(seen) == 3
    page = httpx.MockTransport(lambda request: httpx.Response(200, text="<html>proxy</html>"))
    with pytest.raises(RewardServiceError) as not_json:
        asyncio.run(AsyncEpisodeClient("http://svc", transport=page).state("e1"))
    assert not_json.value.code == "bad_response"


def test_the_blocking_client_works_inside_a_running_loop_on_one_http_client():
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"id": "e1", "status": "open"})

    client = EpisodeClient("http://svc", transport=httpx.MockTransport(handler))
    try:

        async def inside() -> dict[str, Any]:
            return client.state("e1")  # blocks this loop's thread, not the client's loop

        assert asyncio.run(inside())["status"] == "open"
        http = client.client._http
        assert client.state("e1")["status"] == "open" and client.client._http is http
    finally:
        client.close()
    assert seen == ["/v1/episodes/e1"] * 2 and client.client._http is None


# --- verifiers -------------------------------------------------------------------------


def scripted_client(traces: dict[str, Trace]) -> Any:
    """A verifiers client whose "model" is a script: ``traced`` replays the traced agent of
    the episode's run; ``claim`` says the work is done without doing any."""
    from verifiers.clients import Client
    from verifiers.types import Response, ResponseMessage, ToolCall

    class Scripted(Client):
        def __init__(self) -> None:
            super().__init__(None)
            self.seen_tools: list[list[str]] = []

        def setup_client(self, config: Any) -> None:
            return None

        async def to_native_tool(self, tool: Any) -> Any:
            return tool

        async def to_native_prompt(self, messages: Any) -> tuple[Any, dict]:
            return messages, {}

        async def get_native_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def raise_from_native_response(self, response: Any) -> None:
            return None

        async def from_native_response(self, response: Any) -> Any:
            return response

        async def close(self) -> None:
            return None

        async def get_response(
            self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
        ) -> Response:
            self.seen_tools.append([t.name for t in tools or []])
            opening = next(m.content for m in prompt if m.role == "user")
            plan = traced_actions(opening, traces) if model == "traced" else [{"content": CLAIM}]
            turn = sum(1 for m in prompt if m.role == "assistant")
            action = plan[turn] if turn < len(plan) else {"content": "Goodbye."}
            calls = [
                ToolCall(
                    id=call.get("id") or f"call_{turn}_{n}",
                    name=call["function"]["name"],
                    arguments=call["function"]["arguments"]
                    if isinstance(call["function"]["arguments"], str)
                    else json.dumps(call["function"]["arguments"]),
                )
                for n, call in enumerate(action.get("tool_calls") or [])
            ]
            message = ResponseMessage(
                content=action.get("content") or "",
                tool_calls=calls or None,
                finish_reason="tool_calls" if calls else "stop",
                is_truncated=False,
            )
            return Response(id=f"r{turn}", created=0, model=model, message=message)

    return Scripted()


def test_the_verifiers_environment_plays_episodes_and_takes_their_rewards(world):
    from trainer_bridge.verifiers_env import WorldEpisodeEnv, episode_dataset

    env = WorldEpisodeEnv(
        world["url"],
        world["world_id"],
        api_key=world["key"],
        run_id="vf-episodes",
        step=0,
        dataset=episode_dataset([t["id"] for t in world["tasks"]]),
    )
    inputs = [dict(row) for row in env.get_dataset()]
    client = scripted_client(world["traces"])
    columns = [
        "episode_id",
        "episode_reward",
        "episode_result",
        "judge_service_valid",
        "episode_sources",
    ]

    async def play() -> tuple[list[dict], list[dict]]:
        traced = await env.run_group(inputs, client, "traced", {}, state_columns=columns)
        claimed = await env.run_group(inputs[:1], client, "claim", {}, state_columns=columns)
        return traced, claimed

    traced, claimed = asyncio.run(play())
    for output in traced:
        result = loaded(output["episode_result"])
        assert output["stop_condition"] == "has_final_env_response", output["error"]
        # the traced agent reaches the reference; the rollout's reward is the episode's
        # (the end-state judge's 1.0, less what the audit finds)
        assert result["verdict"]["reached"] is True and result["sample"]["raw_reward"] == 1.0
        assert output["reward"] == output["episode_reward"] == result["sample"]["reward"]
        assert output["judge_service_valid"] is True
        roles = [m["role"] for m in output["completion"]]
        assert {"assistant", "tool", "user"} <= set(roles), roles  # a multi-turn episode
        assert output["prompt"][0]["role"] == "system"
        sources = [s["source"] for s in loaded(output["episode_sources"])]
        assert sources[:2] == ["system", "user"] and {"world", "user"} <= set(sources[2:])
    first = client.seen_tools[0]
    assert first and all(tools == first for tools in client.seen_tools)

    claim = claimed[0]
    assert claim["reward"] == 0.0 and claim["judge_service_valid"] is True
    verdict = loaded(claim["episode_result"])["verdict"]
    assert verdict["reached"] is False and verdict["diff"]
    stored = rows(
        world["db"], "SELECT id, status, step FROM episodes WHERE run_id = ?", "vf-episodes"
    )
    ids = {o["episode_id"] for o in traced + claimed}
    assert {i for i, *_ in stored} == ids and {(s, n) for _, s, n in stored} == {("done", 0)}
    batches = rows(world["db"], "SELECT step FROM batches WHERE run_id = ?", "vf-episodes")
    assert batches == [(0,)] * len(ids)


def test_a_rollout_stopped_by_verifiers_ends_its_episode_with_its_last_message(world):
    """A verifiers turn limit below the episode's: the cleanup ends the episode (the agent
    ends it) with the message the episode had not had, and the rollout still gets its reward."""
    from trainer_bridge.verifiers_env import WorldEpisodeEnv, episode_dataset

    env = WorldEpisodeEnv(
        world["url"],
        world["world_id"],
        api_key=world["key"],
        run_id="vf-stopped",
        rollout_max_turns=1,
        dataset=episode_dataset([world["tasks"][0]["id"]]),
    )
    inputs = [dict(row) for row in env.get_dataset()]
    columns = ["episode_id", "episode_reward"]
    outputs = asyncio.run(
        env.run_group(inputs, scripted_client(world["traces"]), "claim", {}, state_columns=columns)
    )
    assert outputs[0]["stop_condition"] == "max_turns_reached" and outputs[0]["reward"] == 0.0
    with EpisodeClient(world["url"], world["key"]) as client:
        held = client.state(outputs[0]["episode_id"])
    assert held["status"] == "done" and held["ended_by"] == "agent"
    assert held["messages"][-1]["role"] == "assistant"
    assert held["messages"][-1]["content"] == CLAIM


# --- TRL ---------------------------------------------------------------------------------


def test_the_trl_environment_plays_the_traced_agent_through_its_tools(world):
    """Without a trainer: each world tool is a method with the tool's schema, a call is a
    step, ``reply_to_user`` talks with the simulated user, and the reward function ends the
    episode with the final message; the traced agent reaches the reference."""
    from transformers.utils import get_json_schema

    from trainer_bridge.trl_episodes import ENDED, WorldEpisodes

    episodes = WorldEpisodes.from_service(
        world["url"], world["world_id"], api_key=world["key"], run_id="trl-tools"
    )
    try:
        task = world["tasks"][0]
        schemas = {t["function"]["name"]: t["function"] for t in task["tools"]}
        env = episodes.environment()
        for name, schema in schemas.items():
            rendered = get_json_schema(getattr(env, name))["function"]
            assert rendered["name"] == name
            assert set(rendered["parameters"]["properties"]) == set(
                schema["parameters"]["properties"]
            )
        opening = env.reset(prompt=[], task_id=task["id"], seed=0)
        actions = traced_actions(opening, world["traces"])
        answers = []
        for action in actions[:-1]:
            if env.end is not None:
                break
            for call in action.get("tool_calls") or []:
                arguments = call["function"]["arguments"]
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
                answers.append(getattr(env, call["function"]["name"])(**arguments))
            if not action.get("tool_calls"):
                answers.append(env.reply_to_user(message=action.get("content") or ""))
        assert answers and all(isinstance(a, str) for a in answers)
        final = [{"role": "assistant", "content": actions[-1].get("content") or ""}]
        rewards = asyncio.run(
            episodes.reward(prompts=[[]], completions=[final], environments=[env])
        )
        held = episodes.client.state(env.episode_id)
        assert held["ended_by"] == "agent" and episodes.played[0]["reached"] is True
        assert held["result"]["sample"]["raw_reward"] == 1.0  # the end state was reached
        assert rewards == [reward_of(held["result"])] and rewards[0] is not None
        assert held["messages"][-1]["content"] == final[0]["content"]
        assert env.reply_to_user(message="still there?") == ENDED
    finally:
        episodes.close()


def test_real_trl_grpo_run_plays_world_episodes(world):
    """A real GRPOTrainer: 2 steps of a tiny random model, each rollout an episode of the
    world; the service stores the episodes and their reward batches under the run id."""
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "trainer_bridge/examples/grpo_world_episodes.py"),
            "--smoke",
            "--service-url",
            world["url"],
            "--api-key",
            world["key"],
            "--world-id",
            world["world_id"],
            "--run-id",
            "trl-episodes",
            "--output-dir",
            str(world["home"] / "grpo"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**service_env(), "TRL_EXPERIMENTAL_SILENCE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"GRPO on episodes: {time.monotonic() - started:.1f} s, {summary}")
    assert summary["steps"] == 2 and summary["episodes"] == 8
    assert summary["steps_of_episodes"] == [0] * 4 + [1] * 4
    # a random model reaches no end state: real zeros, none masked
    assert summary["rewards"] == [0.0] * 8 and summary["masked"] == 0
    assert len(summary["tools"]) == 3
    stored = rows(
        world["db"], "SELECT id, status, step FROM episodes WHERE run_id = ?", "trl-episodes"
    )
    assert {i for i, *_ in stored} == set(summary["episode_ids"])
    assert sorted((s, n) for _, s, n in stored) == [("done", 0)] * 4 + [("done", 1)] * 4
    batches = rows(
        world["db"],
        "SELECT step, n_samples, status FROM batches WHERE run_id = ? ORDER BY step",
        "trl-episodes",
    )
    assert batches == [(0, 1, "done")] * 4 + [(1, 1, "done")] * 4


def test_real_trl_grpo_run_with_echo_learns_from_the_worlds_answers(world):
    """A real GRPOTrainer with ECHO (``echo_coef`` 0.5): 2 steps of SmolLM2-135M (the local
    judge's GGUF), taught in memory to open with a traced read call that the world answers,
    so its rollouts hold the world's answers. Each step logs their cross-entropy, and (no rollout
    reaches an end state, so GRPO's advantages and loss are 0) the loss is λ times it: the
    term is in the loss, and only the world's tokens are in it."""
    read = next(
        call["function"]
        for trace in world["traces"].values()
        for message in trace.messages
        for call in message.get("tool_calls") or []
        if call["function"]["name"] == "find_user_id_by_email"
    )
    arguments = read["arguments"]
    opening = {
        "name": read["name"],
        "arguments": json.loads(arguments) if isinstance(arguments, str) else arguments,
    }
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "trainer_bridge/examples/grpo_echo.py"),
            "--smoke-call",
            json.dumps(opening),
            "--smoke",
            "--service-url",
            world["url"],
            "--api-key",
            world["key"],
            "--world-id",
            world["world_id"],
            "--run-id",
            "trl-echo",
            "--echo-coef",
            "0.5",
            "--gguf",
            str(default_model_path()),
            "--output-dir",
            str(world["home"] / "grpo-echo"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**service_env(), "TRL_EXPERIMENTAL_SILENCE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 2 and summary["episodes"] == 8 and summary["masked"] == 0
    assert summary["rewards"] == [0.0] * 8 and len(summary["echo"]) == 2
    first = summary["echo"][0]
    assert first["echo/tokens_world"] > 0 and first["tools/call_frequency"] > 0, summary["echo"]
    for step in summary["echo"]:
        assert step["echo/tokens_action"] > 0 and step["echo/tokens_simulated"] == 0, step
        ce = step.get("echo/ce_world", 0.0)  # none when no rollout called a tool
        assert (step["echo/tokens_world"] > 0) == (0 < ce < 20), step
        assert step["loss"] == pytest.approx(0.5 * ce, rel=1e-3, abs=1e-4), step
    stored = rows(world["db"], "SELECT status FROM episodes WHERE run_id = ?", "trl-echo")
    assert sorted(stored) == [("done",)] * 8
