"""One odd trace never fails a forge job (issue 50): a trace the forge cannot use is set aside,
listed with its line and the reason, and the other traces are forged; an unpaired tool call
or answer is dropped and listed, and its trace forged.

Each case is one odd trace after the seven banking traces of ``tests.forge_data`` (four
tasks), run as the job runs: :func:`judge_service.forge.job.run_forge` on SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge_service.core.settings import Settings, get_settings
from judge_service.core.storage.db import session_scope
from judge_service.forge import store as forge_store
from judge_service.forge.job import run_forge
from judge_service.traces.calls import broken_pairs, tool_calls
from judge_service.traces.conversation import Trace, read_traces
from judge_service.traces.goals import goals
from judge_service.traces.inputs import ForgeInputError
from tests.forge_data import SYSTEM, bot, trace, traces, user
from tests.forge_support import forge, upload
from tests.helpers import service_env
from tests.support_cli import run_in_process

GOOD_TASKS = 4
ODD_LINE = len(traces()) + 1


@pytest.fixture
def embedded_settings(migrated_sqlite_url: str) -> Settings:
    """The embedded app's settings, comparing goals by TF-IDF (no model to load)."""
    return get_settings(
        database_url=migrated_sqlite_url, broker_url=None, cache_url=None, forge_embeddings="tfidf"
    )


def jsonl(rows: list[Any]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def run_job(settings: Settings, *odd: dict[str, Any]) -> dict[str, Any]:
    """The job of the good traces then ``odd``, run to its end: status, counts, result."""
    with session_scope(settings.database_url) as session:
        job = forge_store.create_job(
            session=session,
            kind="traces",
            options={"mine": False},
            inputs=jsonl([*traces(), *odd]),
            created_by="test",
        )
        job_id = job.id
    status = run_forge(job_id, settings=settings)
    with session_scope(settings.database_url) as session:
        row = forge_store.get_job(session=session, job_id=job_id)
        assert row is not None
        assert status == "done", row.error
        return {"counts": row.counts, "result": row.result}


def assert_set_aside(job: dict[str, Any], trace_id: str, reason: str) -> None:
    """The good traces were forged, and the odd one is listed, alone, with its reason."""
    counts, result = job["counts"], job["result"]
    assert counts["tasks"] == GOOD_TASKS and counts["traces"] == len(traces())
    assert counts["set_aside"] == 1
    assert result["set_aside"] == [{"trace_id": trace_id, "line": ODD_LINE, "reason": reason}]


def tool_message(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def calling(call_id: str, name: str, args: str = "{}") -> dict[str, Any]:
    function = {"name": name, "arguments": args}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "function": function}],
    }


def test_a_user_who_said_only_stop_is_set_aside(embedded_settings: Settings):
    # the real run of issue 50: an IndexError in goals.py failed the whole job
    odd = trace("stop", bot("Hi! How can I help you today?"), user("###STOP###"))
    job = run_job(embedded_settings, odd)
    assert_set_aside(job, "stop", "the user said nothing but simulator tokens such as ###STOP###")


def test_goals_of_a_trace_without_user_words_are_none_not_an_index_error():
    trace_ = Trace("stop", 1, [SYSTEM, bot("Hi"), user("###STOP###")], None, {})
    assert goals(trace_) == []


def test_a_trace_with_no_user_turn_is_set_aside(embedded_settings: Settings):
    odd = trace("mute", bot("Hello?"), {"role": "user", "content": "  "}, bot("Anyone there?"))
    job = run_job(embedded_settings, odd)
    assert_set_aside(job, "mute", "the trace has no user turn with text")


def test_a_trace_with_no_assistant_turn_is_set_aside(embedded_settings: Settings):
    odd = trace("alone", user("Please freeze my credit card, I lost it."))
    job = run_job(embedded_settings, odd)
    assert_set_aside(job, "alone", "the trace has no assistant turn")


def test_a_trace_of_only_tool_messages_is_set_aside(embedded_settings: Settings):
    odd = {"id": "tools", "messages": [tool_message("c", '{"ok": true}'), tool_message("d", "x")]}
    job = run_job(embedded_settings, odd)
    assert_set_aside(
        job, "tools", "the trace holds only tool messages: no user turn, no assistant turn"
    )


def test_a_message_that_is_not_an_object_sets_its_trace_aside(embedded_settings: Settings):
    odd = trace("junk", user("How do I reset my password?"), "oops", bot("Settings."))
    job = run_job(embedded_settings, odd)
    assert_set_aside(job, "junk", "message 2 is a string, not an object")


@pytest.mark.parametrize(
    ("content", "kind"), [({"text": "hi"}, "an object"), (42, "a number"), (True, "a boolean")]
)
def test_content_of_an_odd_type_sets_its_trace_aside(
    embedded_settings: Settings, content: Any, kind: str
):
    odd = trace(
        "odd", user("How do I reset my password?"), {"role": "assistant", "content": content}
    )
    job = run_job(embedded_settings, odd)
    assert_set_aside(job, "odd", f"message 2's content is {kind}, not text")


def test_a_malformed_tool_call_sets_its_trace_aside(embedded_settings: Settings):
    # ``function`` as a bare name raised AttributeError in calls.py
    broken = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": "x"}]}
    odd = trace("call", user("Check my account 12345"), broken, bot("Done."))
    job = run_job(embedded_settings, odd)
    assert_set_aside(job, "call", "message 2's tool call 0 is not an object with a `function`")


def test_an_unpaired_call_and_answer_are_dropped_and_the_trace_forged(
    embedded_settings: Settings,
):
    odd = trace(
        "pairs",
        user("Please cancel my order 7654321, I ordered it twice."),
        calling("c1", "cancel_order", '{"order_id": "7654321"}'),
        tool_message("zz", '{"order_id": "7654321", "status": "cancelled"}'),
        bot("Your order 7654321 is cancelled."),
    )
    job = run_job(embedded_settings, odd)
    counts, result = job["counts"], job["result"]
    assert counts["set_aside"] == 0 and result["set_aside"] == []
    assert counts["traces"] == len(traces()) + 1 and counts["tasks"] == GOOD_TASKS + 1
    assert [p for p in result["broken_pairs"] if p["trace_id"] == "pairs"] == [
        {"trace_id": "pairs", "line": ODD_LINE, "reason": reason}
        for reason in (
            "call cancel_order (message 2) has no answer",
            "tool message 3 answers no call",
        )
    ]
    # dropped, not guessed at: the stray answer is not taken as the call's
    (parsed,), _ = read_traces(jsonl([odd]))
    assert [c.answer for c in tool_calls(parsed)] == [None]


def test_paired_calls_of_the_agent_and_of_the_user_are_not_broken():
    phone = {
        "role": "user",
        "content": None,
        "tool_calls": [{"id": "u1", "function": {"name": "check_status_bar"}}],
    }
    paired = trace(
        "ok",
        user("My phone has no signal."),
        calling("a1", "get_line", '{"line_id": "L1"}'),
        tool_message("a1", '{"line_id": "L1", "status": "active"}'),
        bot("Please check your status bar."),
        phone,
        tool_message("u1", "No signal"),
        bot("Toggle airplane mode."),
    )
    (parsed,), _ = read_traces(jsonl([paired]))
    assert broken_pairs(parsed) == []


def test_an_upload_whose_every_trace_is_set_aside_is_refused_naming_the_first():
    with pytest.raises(ForgeInputError) as error:
        read_traces(jsonl([trace("a", bot("x")), trace("b", user("###STOP###"), bot("y"))]))
    assert (error.value.line, error.value.field) == (1, "messages")


def test_the_api_lists_the_traces_set_aside(client, keys: dict[str, dict[str, str]]):
    odd = [trace("stop", bot("Hi!"), user("###STOP###")), trace("alone", user("Hello?"))]
    job = forge(client, keys["reviewer"], "traces", jsonl([*traces(), *odd]), mine="false")
    again = client.get(f"/v1/forge/jobs/{job['id']}", headers=keys["trainer"]).json()
    assert again["counts"]["set_aside"] == 2 and again["counts"]["tasks"] == GOOD_TASKS
    assert again["result"]["set_aside"] == [
        {
            "trace_id": "stop",
            "line": ODD_LINE,
            "reason": "the user said nothing but simulator tokens such as ###STOP###",
        },
        {"trace_id": "alone", "line": ODD_LINE + 1, "reason": "the trace has no assistant turn"},
    ]
    # an upload with nothing to forge is still refused, naming the line
    refused = upload(client, keys["reviewer"], "traces", jsonl(odd), expect=422)
    assert refused["error"]["detail"] == {"line": 1, "field": "messages"}


def test_the_cli_prints_the_traces_set_aside(migrated_sqlite_url: str, tmp_path: Path):
    path = tmp_path / "traces.jsonl"
    path.write_text(jsonl([*traces(), trace("stop", bot("Hi!"), user("###STOP###"))]))
    env = service_env(JS_DATABASE_URL=migrated_sqlite_url, JS_FORGE_EMBEDDINGS="tfidf")
    printed = json.loads(
        run_in_process("forge", "traces", str(path), "--no-mine", "--json", env=env, cwd=tmp_path)
    )
    assert printed["counts"]["set_aside"] == 1 and printed["counts"]["tasks"] == GOOD_TASKS
    reason = "the user said nothing but simulator tokens such as ###STOP###"
    assert printed["set_aside"] == [{"trace_id": "stop", "line": ODD_LINE, "reason": reason}]
    # a trace set aside is not remembered as forged: the same upload sets it aside again
    table = run_in_process("forge", "traces", str(path), "--no-mine", env=env, cwd=tmp_path)
    assert "1 set aside" in table and "set aside: 1 traces, not forged" in table
    assert f"line {ODD_LINE} (stop): {reason}" in table
