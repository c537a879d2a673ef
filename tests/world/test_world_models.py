"""Models in episodes. A user played by a model: the goal and the traced user's facts in its
brief, the chat from the user's side, its reply as the observation, its "ends" ending the
episode, and a failed call that leaves the episode as it was (the step can be sent again).
The simulator (path e): a call nothing learned answers gets the model's answer, told the
tool's schema, the entities the call names and similar traced calls; the state stays.

The model is the fake OpenAI-compatible server; the world is the seed loop's (retail goals).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge_service.core.settings import Settings
from tests.fakes import FakeOpenAIServer
from tests.forge_support import forge
from tests.helpers import service_env
from tests.support_cli import invoke, run_in_process
from tests.world.test_world_api import wait_world
from tests.world.test_world_seed_loop import GOAL, POLICIES, corpus

Headers = dict[str, str]


@pytest.fixture
def world(client, keys: dict[str, Headers]) -> tuple[str, dict]:
    text, _, _ = corpus()
    job = forge(client, keys["reviewer"], "traces", text, mine="false")
    listed = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"])
    task = next(t for t in listed.json()["tasks"] if POLICIES["correct"] in t["source"]["traces"])
    queued = client.post("/v1/worlds", json={"jobs": [job["id"]]}, headers=keys["reviewer"])
    built = wait_world(client, keys["trainer"], queued.json()["id"])
    assert built["status"] == "done", built
    return built["id"], task


def _say(text: str) -> dict:
    return {"action": {"role": "assistant", "content": text}}


def test_a_model_plays_the_user_from_the_goal_and_the_traced_facts(
    client, keys: dict[str, Headers], world: tuple[str, dict], fake: FakeOpenAIServer
):
    world_id, task = world
    fake.configure(
        "customer",
        replies=[
            # the first reply whose words are anywhere in the chat answers: the later first
            {"match": "Anything else", "contents": [{"message": "No, bye!", "ends": True}]},
            {"match": "zip code", "contents": [{"message": "It is 46218.", "ends": False}]},
        ],
    )
    spec = {"name": "openai/customer", "api_base": fake.url}
    body = {"task_id": task["id"], "seed": 3, "user_model": spec, "run_id": "user-model"}
    opened = client.post(f"/v1/worlds/{world_id}/episodes", json=body, headers=keys["trainer"])
    assert opened.status_code == 201, opened.text
    episode_id = opened.json()["episode_id"]
    opening = opened.json()["observation"]["messages"][-1]["content"]
    assert GOAL and opening, "the opening turn stays the traced one"

    step = f"/v1/episodes/{episode_id}/step"
    first = client.post(step, json=_say("What is your zip code?"), headers=keys["trainer"])
    assert first.status_code == 200, first.text
    assert first.json()["observation"]["messages"] == [{"role": "user", "content": "It is 46218."}]
    assert first.json()["done"] is False

    # what the model was told: the brief with the goal and the facts, the chat turned round
    sent = fake.bodies[-1]["messages"]
    assert sent[0]["role"] == "system" and "Your goal:" in sent[0]["content"]
    assert opening.split()[0] in sent[0]["content"], "the traced turns are its facts"
    assert [m["role"] for m in sent[1:]] == ["assistant", "user"]
    assert sent[-1]["content"] == "What is your zip code?"
    assert fake.bodies[-1].get("temperature") == 0.0 and fake.bodies[-1].get("seed") == 3

    last = client.post(step, json=_say("Done. Anything else?"), headers=keys["trainer"])
    assert last.json()["done"] is True, last.json()
    stored = client.get(f"/v1/episodes/{episode_id}", headers=keys["trainer"]).json()
    assert stored["ended_by"] == "user" and stored["messages"][-1]["content"] == "No, bye!"
    assert last.json()["result"]["verdict"]["reached"] is False  # nothing was written


def test_a_failed_user_model_leaves_the_episode_and_a_bad_one_is_refused(
    client, keys: dict[str, Headers], world: tuple[str, dict], fake: FakeOpenAIServer
):
    world_id, task = world
    fake.configure("broken", fault="500")
    spec = {"name": "openai/broken", "api_base": fake.url, "timeout_s": 5}
    body = {"task_id": task["id"], "user_model": spec}
    opened = client.post(f"/v1/worlds/{world_id}/episodes", json=body, headers=keys["trainer"])
    episode_id = opened.json()["episode_id"]
    before = client.get(f"/v1/episodes/{episode_id}", headers=keys["trainer"]).json()
    failed = client.post(
        f"/v1/episodes/{episode_id}/step", json=_say("Your name?"), headers=keys["trainer"]
    )
    assert failed.status_code == 503, failed.text
    assert failed.json()["error"]["code"] == "user_model_failed"
    after = client.get(f"/v1/episodes/{episode_id}", headers=keys["trainer"]).json()
    assert after["messages"] == before["messages"] and after["turns"] == before["turns"] == 0

    # tool calls need no user: the episode goes on without the model
    call = {"id": "c1", "type": "function", "function": {"name": "think", "arguments": "{}"}}
    action = {"action": {"role": "assistant", "tool_calls": [call]}}
    tools = client.post(f"/v1/episodes/{episode_id}/step", json=action, headers=keys["trainer"])
    assert tools.status_code == 200 and tools.json()["observation"]["messages"][0]["role"] == "tool"

    unknown = {"task_id": task["id"], "user_model": {"name": "openai/x", "endpoint": "nope"}}
    refused = client.post(f"/v1/worlds/{world_id}/episodes", json=unknown, headers=keys["trainer"])
    assert refused.status_code == 422 and "user_model" in refused.text, refused.text


def _calls(*calls: tuple[str, dict]) -> dict:
    tool_calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": args}}
        for n, (name, args) in enumerate(calls)
    ]
    return {"action": {"role": "assistant", "tool_calls": tool_calls}}


def test_a_simulator_answers_what_nothing_learned_answers(
    client, keys: dict[str, Headers], world: tuple[str, dict], fake: FakeOpenAIServer
):
    world_id, task = world
    simulated = '{"order_id": "SIMULATED", "status": "pending"}'
    fake.configure(
        "backend", replies=[{"match": "get_order_details", "contents": [{"answer": simulated}]}]
    )
    spec = {"name": "openai/backend", "api_base": fake.url}
    body = {"task_id": task["id"], "simulator": spec}
    opened = client.post(f"/v1/worlds/{world_id}/episodes", json=body, headers=keys["trainer"])
    assert opened.status_code == 201, opened.text
    step = f"/v1/episodes/{opened.json()['episode_id']}/step"
    user_id = "aarav_brown_3744"  # a user whose orders the traces show only in part
    user = client.post(
        step, json=_calls(("get_user_details", {"user_id": user_id})), headers=keys["trainer"]
    )
    orders = json.loads(user.json()["observation"]["messages"][0]["content"])["orders"]
    asked = _calls(*[("get_order_details", {"order_id": o}) for o in orders])
    answered = client.post(step, json=asked, headers=keys["trainer"])
    assert answered.status_code == 200, answered.text
    texts = [m["content"] for m in answered.json()["observation"]["messages"]]
    assert simulated in texts, "an order no trace showed is the simulator's"
    assert any(t != simulated and '"order_id"' in t for t in texts), "known ones: path (a)"
    stored = client.get(f"/v1/episodes/{opened.json()['episode_id']}", headers=keys["trainer"])
    marks = [a for a in stored.json()["answers"] if a.get("simulated")]
    assert marks and all(a["path"] == "model_needed" for a in marks), stored.json()["answers"]
    brief = fake.bodies[-1]["messages"][0]["content"]
    assert "Earlier call: get_order_details(" in brief and "order_id" in brief

    refused = client.post(
        f"/v1/worlds/{world_id}/episodes",
        json={"task_id": task["id"], "simulator": {"name": "openai/x", "endpoint": "nope"}},
        headers=keys["trainer"],
    )
    assert refused.status_code == 422 and "simulator" in refused.text, refused.text


def test_a_world_names_its_episodes_models_and_a_reset_may_name_others(
    client, keys: dict[str, Headers], world: tuple[str, dict], fake: FakeOpenAIServer
):
    _, task = world
    fake.configure(
        "world-user",
        replies=[
            {
                "match": "Your order",
                "contents": [{"message": "From the world's model.", "ends": False}],
            }
        ],
    )
    fake.configure(
        "reset-user",
        replies=[
            {
                "match": "Your order",
                "contents": [{"message": "From the reset's model.", "ends": False}],
            }
        ],
    )
    job_id = task["job_id"]
    models = {"user_model": {"name": "openai/world-user", "api_base": fake.url}}
    made = client.post("/v1/worlds", json={"jobs": [job_id], **models}, headers=keys["reviewer"])
    assert made.status_code == 202, made.text
    built = wait_world(client, keys["trainer"], made.json()["id"])
    assert built["models"] == models

    def first_reply(**extra: dict) -> str:
        body = {"task_id": task["id"], **extra}
        opened = client.post(
            f"/v1/worlds/{built['id']}/episodes", json=body, headers=keys["trainer"]
        )
        assert opened.status_code == 201, opened.text
        said = client.post(
            f"/v1/episodes/{opened.json()['episode_id']}/step",
            json=_say("Your order id?"),
            headers=keys["trainer"],
        )
        return said.json()["observation"]["messages"][0]["content"]

    assert first_reply() == "From the world's model."
    own = {"name": "openai/reset-user", "api_base": fake.url}
    assert first_reply(user_model=own) == "From the reset's model."

    for field, spec in (
        ("simulator", {"name": "openai/x", "endpoint": "nope"}),
        ("user_model", {"name": "openai/x", "api_base": fake.url, "api_key": "sk-secret"}),
    ):
        bad = client.post(
            "/v1/worlds", json={"jobs": [job_id], field: spec}, headers=keys["reviewer"]
        )
        assert bad.status_code == 422 and field in bad.text, bad.text
        assert "sk-secret" not in bad.text


def test_the_command_line_names_a_worlds_models(
    world: tuple[str, dict], embedded_settings: Settings, fake: FakeOpenAIServer, tmp_path: Path
):
    _, task = world
    env = service_env(JS_DATABASE_URL=embedded_settings.database_url)
    spec = json.dumps({"name": "openai/backend", "api_base": fake.url})
    built = json.loads(
        run_in_process(
            "world", "build", task["job_id"], "--simulator", spec, "--json", env=env, cwd=tmp_path
        )
    )
    assert built["status"] == "done"
    assert built["models"] == {"simulator": {"name": "openai/backend", "api_base": fake.url}}
    keyed = json.dumps({"name": "openai/x", "api_key": "sk-secret"})
    refused = invoke("world", "build", task["job_id"], "--user-model", keyed, env=env, cwd=tmp_path)
    assert refused.exit_code == 2 and "--user-model" in refused.stderr, refused.stderr
