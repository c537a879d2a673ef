"""The hindsight panel: where a task's runs disagree, judges choose among the candidate end
states, and a strict majority sets the proposed reference with its reasoning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge_service.forge.end_states import Candidate, Consensus, RunEvidence, consensus
from judge_service.forge.hindsight import JUDGE_WEIGHT, apply_panel, needs_judge, question
from tests.fakes import FakeOpenAIServer
from tests.forge_support import forge, spec

RETAIL = Path(__file__).resolve().parents[2] / "data" / "retail"
CANCELLED = {"order_id=#W1": {"status": "cancelled"}}
Headers = dict[str, str]


def _disagreeing() -> Consensus:
    """Two runs, one cancelled the order cleanly, the other wrote nothing and was flagged."""
    return consensus(
        [("good", CANCELLED, False), ("liar", {}, True)],
        {"good": RunEvidence([], True), "liar": RunEvidence(["claimed_without_write"])},
    )


def _ask(agreed: Consensus) -> Any:
    writes = {"good": [{"tool": "cancel_order", "arguments": {"order_id": "#W1"}}], "liar": []}
    return question(agreed, "Cancel order #W1.", "Confirm before any write.", writes)


def test_the_question_shows_each_candidate_by_its_change_in_a_fixed_order():
    agreed = _disagreeing()
    assert needs_judge(agreed) and agreed.reference == CANCELLED
    asked = _ask(agreed)
    body = asked.messages[1]["content"]
    assert "<policy>\nConfirm before any write.\n</policy>" in body
    assert "cancel_order" in body.split("<candidate 1>")[1].split("</candidate 1>")[0]
    assert "no change" in body.split("<candidate 2>")[1].split("</candidate 2>")[0]
    assert [c.end_state for c in asked.shown] == [CANCELLED, {}]
    # the forge's own ranking is not what orders them: the same candidates, ranked the
    # other way round, are shown in the same order
    agreed.candidates.reverse()
    assert [c.end_state for c in _ask(agreed).shown] == [CANCELLED, {}]


def test_a_majority_of_the_panel_sets_the_reference_and_its_reasoning_is_kept():
    agreed = _disagreeing()
    asked = _ask(agreed)
    outcome = apply_panel(
        asked,
        [
            ("a", {"reasoning": "The user never confirmed.", "choice": 2}),
            ("b", {"reasoning": "Nothing was confirmed", "choice": 2}),
            ("c", {"reasoning": "cancel it", "choice": 1}),
        ],
    )
    assert outcome == "chosen" and agreed.reference == {}
    assert agreed.source == "proposed" and agreed.needs_review
    top = agreed.candidates[0]
    assert top.end_state == {} and any(
        r == "hindsight judge a: chose this: The user never confirmed." for r in top.reasons
    )
    assert not any("cancel it" in r for r in top.reasons)


def test_a_split_or_senseless_panel_leaves_the_surface_evidence_to_decide():
    for replies, want in (
        ([("a", {"reasoning": "x", "choice": 1}), ("b", {"reasoning": "y", "choice": 2})], "split"),
        ([("a", {"reasoning": "x", "choice": 7}), ("b", None)], "unanswered"),
        ([("a", {"reasoning": "x", "choice": True}), ("b", {"choice": "2"})], "unanswered"),
    ):
        agreed = _disagreeing()
        assert apply_panel(_ask(agreed), replies) == want
        assert agreed.reference == CANCELLED
        assert not any("hindsight" in r for c in agreed.candidates for r in c.reasons)


def test_an_agreed_or_single_reference_is_not_asked_about():
    assert not needs_judge(consensus([("a", CANCELLED, False), ("b", CANCELLED, False)]))
    assert not needs_judge(consensus([("a", CANCELLED, False)]))
    assert not needs_judge(Consensus([Candidate({}, 1)], {}, "proposed", True))


def _runs(*trace_ids: str) -> str:
    rows = map(json.loads, (RETAIL / "traces.jsonl").read_text().splitlines())
    return "".join(json.dumps(r) + "\n" for r in rows if r["id"] in trace_ids)


def test_a_forge_job_asks_its_panel_about_runs_that_disagree(
    client, keys: dict[str, Headers], fake: FakeOpenAIServer
):
    # retail-0016-r1 claimed a cancellation it never made; r2 made it: no consensus
    text = _runs("retail-0016-r1", "retail-0016-r2")
    fake.configure(
        "hindsight",
        replies=[
            {
                "match": "<candidate 2>",
                "contents": [{"reasoning": "The customer never confirmed.", "choice": 2}],
            }
        ],
    )
    judge = spec(fake, "hindsight")
    job = forge(client, keys["reviewer"], "traces", text, mine="false", hindsight_judges=[judge])
    assert job["result"]["hindsight"] == {"asked": 1, "failed_calls": 0, "chosen": 1}
    asked = [b for b in fake.bodies if "<candidate 1>" in json.dumps(b)]
    shown = json.dumps(asked[-1])
    assert (
        "no change" in shown.split("<candidate 2>")[1]
        and "cancel" in shown.split("<candidate 2>")[0]
    )
    tasks = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=keys["trainer"]).json()[
        "tasks"
    ]
    (task,) = tasks
    assert task["end_state_source"] == "proposed" and task["needs_review"]
    assert task["end_state"] == {} and task["end_states"][0]["end_state"] == {}
    assert any("The customer never confirmed." in r for r in task["end_states"][0]["reasons"])
    # without the panel the run that cancelled cleanly would have been the reference
    chosen, other = task["end_states"]
    assert other["end_state"] != {} and other["score"] > chosen["score"] - JUDGE_WEIGHT
    # the runs' signs follow the panel's reference: the cancelling run now disagrees with it
    marked = {(f["trace_id"], f["kind"]) for f in task["failures"]}
    assert ("retail-0016-r2", "disagrees_with_proposed") in marked
    assert ("retail-0016-r1", "disagrees_with_proposed") not in marked
    assert "retail-0016-r2" in job["result"]["failed"]
    # off, or with no model, nobody is asked
    asked_before = sum(fake.requests.values())
    off = forge(
        client,
        keys["reviewer"],
        "traces",
        _runs("retail-0016-r3", "retail-0004-r1"),
        mine="false",
        hindsight="false",
        hindsight_judges=[judge],
    )
    assert off["result"]["hindsight"] is None and sum(fake.requests.values()) == asked_before
