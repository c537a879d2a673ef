"""Forge model options (``miner``, ``generator``, ``verifiers``, ``solver``): a plain model
string and a JSON object are both accepted, stored as the object ``{"name": ..., <options>}``,
and resolved by the worker; a model that cannot be resolved fails the job naming its option
(issue 34, point 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge_service.core.settings import Settings, get_settings
from judge_service.core.storage.db import session_scope
from judge_service.forge.wire import DocumentOptions, TraceOptions
from judge_service.judging.client_options import model_options
from judge_service.judging.endpoints import FREE_ENDPOINT_KEY
from tests.fakes import FakeOpenAIServer
from tests.forge_data import ALETSCH, BELL_ROCK, DOCUMENTS, traces
from tests.forge_support import script_documents, spec, upload, wait_job

#: Each option's model as a plain string (the README's form), reaching the fake server
#: through litellm's environment variables (``env_models``).
AS_STRING = {
    "generator": "openai/gen",
    "verifiers": "openai/ver",
    "solver": "hosted_vllm/sol",
    "miner": "openai/miner",
}


def jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def documents() -> str:
    return jsonl([{"id": name, "text": text} for name, text in DOCUMENTS.items()])


@pytest.fixture
def embedded_settings(migrated_sqlite_url: str, tmp_path: Path) -> Settings:
    """The embedded app's settings, with a local model that cannot run (no model file)."""
    return get_settings(
        database_url=migrated_sqlite_url,
        broker_url=None,
        cache_url=None,
        local_model_url=None,
        local_model_path=str(tmp_path / "missing.gguf"),
    )


@pytest.fixture
def env_models(monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAIServer) -> FakeOpenAIServer:
    """Models named by a plain string reach the fake server, as with a real deployment's
    ``OPENAI_API_BASE`` and ``HOSTED_VLLM_API_BASE``."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for provider in ("OPENAI", "HOSTED_VLLM"):
        monkeypatch.setenv(f"{provider}_API_BASE", fake.url)
        monkeypatch.setenv(f"{provider}_API_KEY", "sk-test")
    return fake


def scripted_documents(fake: FakeOpenAIServer) -> dict[str, Any]:
    """The fake's generator, verifier and solver (models ``gen``, ``ver``, ``sol``) such that
    the glacier question is kept and the lighthouse one dropped; their object-form options."""
    return script_documents(
        fake,
        {"Aletsch": ALETSCH, "Bell Rock": BELL_ROCK},
        {"Aletsch": ["the Aletsch glacier"], "Bell Rock": ["Thomas Telford"]},
        {"largest": ["Mont Blanc glacier", "The Aletsch Glacier", "Rhone", "no idea"]},
    )


def scripted_miner(fake: FakeOpenAIServer) -> dict[str, Any]:
    """The fake's mining model (``miner``), proposing one item for any family."""
    item = {
        "text": "Did the agent resolve the user's request?",
        "polarity": "good",
        "importance": 2,
        "rationale": "seen",
        "cited": [],
    }
    fake.configure("miner", replies=[{"match": "", "contents": [{"items": [item]}]}])
    return spec(fake, "miner")


def run_job(client, headers, kind: str, text: str, **options: Any) -> dict:
    return wait_job(client, headers, upload(client, headers, kind, text, **options)["id"])


@pytest.mark.parametrize("form", ["string", "object"])
@pytest.mark.parametrize("option", ["generator", "verifiers", "solver"])
def test_each_documents_model_option_in_either_form_is_stored_as_an_object_and_runs(
    client, keys, env_models: FakeOpenAIServer, option: str, form: str
):
    options = scripted_documents(env_models)
    given = AS_STRING[option] if form == "string" else options[option]
    expected = {"name": given} if isinstance(given, str) else given
    if option == "verifiers":
        expected = [expected] if form == "string" else given
    options[option] = given
    job = run_job(client, keys["reviewer"], "documents", documents(), **options)
    assert job["options"][option] == expected, job["options"]
    assert job["status"] == "done", job
    assert job["counts"]["tasks"] == 1 and job["counts"]["dropped"]["unanswerable"] == 1


def test_the_readme_form_plain_strings_for_every_model_finishes(
    client, keys, env_models: FakeOpenAIServer
):
    """``?generator=openai/...&verifiers=openai/...&solver=hosted_vllm/...`` (issue 34)."""
    scripted_documents(env_models)
    models = {o: AS_STRING[o] for o in ("generator", "verifiers", "solver")}
    job = run_job(client, keys["reviewer"], "documents", documents(), **models)
    assert job["status"] == "done", job
    assert {o: job["options"][o] for o in models} == {
        "generator": {"name": "openai/gen"},
        "verifiers": [{"name": "openai/ver"}],
        "solver": {"name": "hosted_vllm/sol"},
    }
    assert job["counts"]["tasks"] == 1
    called = {body["model"] for body in env_models.bodies}
    assert {"gen", "ver", "sol"} <= called


@pytest.mark.parametrize(
    "given",
    [
        ["openai/ver", "hosted_vllm/ver"],  # repeated
        "openai/ver, hosted_vllm/ver",  # comma-separated
        json.dumps(["openai/ver", {"name": "hosted_vllm/ver", "timeout_s": 30}]),  # a JSON list
    ],
)
def test_every_form_of_verifiers_is_stored_as_a_list_of_objects(
    client, keys, env_models: FakeOpenAIServer, given: Any
):
    options = {**scripted_documents(env_models), "verifiers": given}
    job = run_job(client, keys["reviewer"], "documents", documents(), **options)
    assert [v["name"] for v in job["options"]["verifiers"]] == ["openai/ver", "hosted_vllm/ver"]
    assert job["status"] == "done", job


@pytest.mark.parametrize("form", ["string", "object"])
def test_the_miner_in_either_form_is_stored_as_an_object_and_mines(
    client, keys, env_models: FakeOpenAIServer, form: str
):
    scripted = scripted_miner(env_models)
    given = AS_STRING["miner"] if form == "string" else scripted
    job = run_job(client, keys["reviewer"], "traces", jsonl(traces()), miner=given)
    assert job["status"] == "done", job
    assert job["options"]["miner"] == ({"name": given} if form == "string" else scripted)
    mined = job["result"]["mining"]
    assert mined and all("error" not in m for m in mined), mined
    assert any(m["items"] for m in mined), mined


def test_a_model_option_that_is_no_json_or_names_no_model_is_a_422(client, keys):
    answer = upload(
        client, keys["reviewer"], "documents", documents(), expect=422, solver='{"name": "x"'
    )
    assert answer["error"]["detail"] == {"field": "solver"}
    assert "not valid JSON" in answer["error"]["message"]
    answer = upload(
        client, keys["reviewer"], "documents", documents(), expect=422, generator={"timeout_s": 5}
    )
    assert answer["error"]["detail"] == {"field": "generator.name"}


def test_options_models_read_either_form_as_the_object():
    documents_options = DocumentOptions.model_validate(
        {"generator": "openai/g", "verifiers": ["openai/v", {"name": "openai/w", "x": 1}]}
    ).model_dump(mode="json", exclude_none=True)
    assert documents_options["generator"] == {"name": "openai/g"}
    assert documents_options["verifiers"] == [{"name": "openai/v"}, {"name": "openai/w", "x": 1}]
    trace_options = TraceOptions.model_validate({"miner": "openai/m"})
    assert trace_options.model_dump(mode="json")["miner"] == {"name": "openai/m"}


def test_model_options_accepts_a_string_and_an_object_alike():
    settings = get_settings(default_judges="exact_match, openai/default", local_model_url=None)
    assert model_options("openai/m", settings) == {"model": "openai/m"}
    assert model_options({"name": "openai/m"}, settings) == {"model": "openai/m"}
    full = {"name": "hosted_vllm/q", "api_base": "http://h/v1", "timeout_s": 9, "weight": 2}
    assert model_options(full, settings) == {
        "model": "hosted_vllm/q",
        "api_base": "http://h/v1",
        "timeout_s": 9,
        "api_key": FREE_ENDPOINT_KEY,  # a free endpoint never gets the environment's key
    }
    assert model_options(None, settings) == {"model": "openai/default"}
    objects = get_settings(default_judges='[{"name": "openai/d", "api_key": "k"}]')
    assert model_options(None, objects) == {"model": "openai/d", "api_key": "k"}


@pytest.mark.parametrize(
    ("spec", "given"), [(7, "int"), ({"api_base": "http://h/v1"}, "without a name"), ("", "")]
)
def test_model_options_names_the_option_of_a_spec_that_names_no_model(spec: Any, given: str):
    settings = get_settings(local_model_url=None)
    with pytest.raises(ValueError, match=f"^option solver: not a model .*{given}"):
        model_options(spec, settings, option="solver")


def test_a_local_model_that_cannot_run_fails_the_job_naming_the_option(
    client, keys, fake: FakeOpenAIServer
):
    options = {**scripted_documents(fake), "solver": "local/smollm2-135m"}
    job = run_job(client, keys["reviewer"], "documents", documents(), **options)
    assert job["status"] == "failed", job
    assert "option solver: local/smollm2-135m cannot run" in job["error"], job["error"]
    assert "no model file" in job["error"]


def test_a_miner_that_cannot_run_is_named_by_the_traces_job(client, keys):
    job = run_job(client, keys["reviewer"], "traces", jsonl(traces()), miner="local/smollm2-135m")
    named = "option miner: local/smollm2-135m cannot run"
    if job["status"] == "failed":  # the miner is needed before mining (goal lines)
        assert named in job["error"], job["error"]
    else:  # the job goes on without mining, and each failed family says why
        mined = job["result"]["mining"]
        assert mined and all(named in m["error"] for m in mined), mined


def stored_job(settings: Settings, kind: str, text: str, options: dict[str, Any]) -> str:
    """A job as stored before options were normalised, run by the worker; its id."""
    from judge_service.forge import store as forge_store
    from judge_service.forge.job import run_forge

    with session_scope(settings.database_url) as session:
        job_id = forge_store.create_job(
            session=session, kind=kind, options=options, inputs=text, created_by=None
        ).id
    run_forge(job_id, settings=settings)
    return job_id


def test_a_job_stored_with_plain_strings_still_runs(
    client, keys, embedded_settings: Settings, env_models: FakeOpenAIServer
):
    scripted_documents(env_models)
    models = {"generator": "openai/gen", "verifiers": ["openai/ver"], "solver": "hosted_vllm/sol"}
    job_id = stored_job(embedded_settings, "documents", documents(), models)
    job = client.get(f"/v1/forge/jobs/{job_id}", headers=keys["reviewer"]).json()
    assert job["status"] == "done" and job["counts"]["tasks"] == 1, job


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"solver": {"api_base": "http://127.0.0.1:1/v1"}}, "solver"),
        ({"generator": 42}, "generator"),
        ({"verifiers": ["openai/ver", None]}, "verifiers[1]"),
    ],
)
def test_a_stored_job_whose_model_cannot_be_resolved_fails_naming_the_option(
    client, keys, embedded_settings: Settings, fake: FakeOpenAIServer, options, option: str
):
    stored = {**scripted_documents(fake), **options}
    job_id = stored_job(embedded_settings, "documents", documents(), stored)
    job = client.get(f"/v1/forge/jobs/{job_id}", headers=keys["reviewer"]).json()
    assert job["status"] == "failed", job
    assert f"option {option}: not a model" in job["error"], job["error"]
