"""The review page in real headless Chromium (Debian's ``chromium``, driven by Playwright).

A real ``judge-service serve`` process; the browser signs in with a reviewer key, approves a
mined rubric item and sees the rubric's version change, labels a rollout, and leaves a
screenshot (docs/review-page.png, refreshed with UPDATE_DOCS_SCREENSHOT=1). Plain HTTP
checks cover Bearer access, roles and the CSRF guard.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.conftest import ROOT, make_key
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, run_cli, service_env
from tests.review.test_review_queue import flagged_batch
from tests.review_support import llm_judge, mine

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT = ROOT / "docs" / "review-page.png"


def refund_rollout(i: int) -> dict:
    """A customer-refund conversation with tool calls; odd ones skip the order lookup (and
    the refund call), so their refund is a claim no tool backs."""

    def call(name: str, arguments: str, result: str, n: int) -> list[dict]:
        function = {"name": name, "arguments": arguments}
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}-{n}", "type": "function", "function": function}],
            },
            {"role": "tool", "tool_call_id": f"c{i}-{n}", "content": result},
        ]

    lookup = [
        *call(
            "lookup_order",
            '{"order_id": "A-1234"}',
            '{"status": "delivered", "days": 12, "return_window_days": 30, "total": "EUR 49.90"}',
            1,
        ),
        *call("refund_order", '{"order_id": "A-1234"}', '{"refunded": "EUR 49.90"}', 2),
    ]
    reply = {
        "role": "assistant",
        "content": "I checked order A-1234: it is inside the 30-day window, so I have refunded "
        "EUR 49.90 to your card; it arrives in 5 business days."
        if i % 2 == 0
        else "No problem, I have refunded you in cash, it should be there soon!",
    }
    return {
        "id": f"chat-{i}",
        "group_id": "p1",
        "prompt": [{"role": "user", "content": "My blender arrived broken, I want my money back."}],
        "completion": [*(lookup if i % 2 == 0 else []), reply],
    }


@dataclass
class Stage:
    url: str
    reviewer: str
    trainer: str
    item_id: int


@pytest.fixture
def stage(tmp_path: Path, migrated_sqlite_url: str) -> Iterator[Stage]:
    """A running service with the seed rubrics, a scored and mined run, and three item kinds."""
    fake = FakeOpenAIServer().start()
    db = migrated_sqlite_url
    env = service_env(JS_DATABASE_URL=db)
    run_cli("rubrics", "import", env=env, cwd=tmp_path)
    admin = {"Authorization": f"Bearer {make_key(db, 'admin')}"}
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for rubric, run in (("customer-refund", "refund-run"), ("travel-booking", "trip-run")):
                body = {
                    "samples": [refund_rollout(i) for i in range(8)],
                    "judges": [llm_judge(fake)],
                    "rubric": rubric,
                    "run_id": run,
                }
                assert http.post("/v1/rewards", json=body, headers=admin).json()["rubric"] == (
                    f"{rubric}@1"
                )
                job = mine(http, admin, rubric, run_id=run, model=llm_judge(fake))
            split = {
                "samples": [refund_rollout(1)],
                "judges": [
                    {"name": "slow_constant", "score": 0.1, "delay_s": 0},
                    {"name": "slow_constant", "score": 0.9, "delay_s": 0},
                ],
                "run_id": "refund-run",
            }
            http.post("/v1/rewards", json=split, headers=admin).raise_for_status()
            items = http.get("/v1/review?kind=rubric_item", headers=admin).json()["items"]
            item_id = next(i["id"] for i in items if i["rubric"] == "customer-refund")
        from judge_service.review.job_review_enqueue import enqueue_review

        enqueue_review(flagged_batch(db, [0.92]), database_url=db)
        assert job["result"]["items"]
        yield Stage(server.url, make_key(db, "reviewer"), make_key(db, "trainer"), item_id)
    finally:
        server.kill()
        fake.stop()


def version_of(page: Page, rubric: str) -> str:
    return page.locator(f'.rubric[data-rubric="{rubric}"] .version').inner_text()


def test_sign_in_approve_and_see_the_version_change(stage: Stage, tmp_path: Path):
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 1000})
            blocked: list[str] = []  # what the pages' Content-Security-Policy stopped
            page.on(
                "console",
                lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None,
            )
            page.goto(f"{stage.url}/review")
            expect(page.get_by_role("heading", name="Sign in to review")).to_be_visible()
            page.get_by_label("API key").fill(stage.reviewer)
            page.get_by_role("button", name="Sign in").click()
            expect(page.locator(".note.ok")).to_contain_text("Signed in")
            assert version_of(page, "customer-refund") == "@1"
            cards = page.locator("article.card")
            kinds = {cards.nth(i).get_attribute("data-kind") for i in range(cards.count())}
            assert kinds == {"rubric_item", "hack_finding", "disagreement"}
            hack = page.locator("article[data-kind=hack_finding]")
            expect(hack).to_contain_text("test_tampering/edited_tests")
            expect(hack).to_contain_text("I edited the tests.")

            item = page.locator(f"#item-{stage.item_id}")
            item.locator("form.actions input[name=note]").fill(
                "both failures skipped the order lookup"
            )
            item.locator("form.actions").get_by_role("button", name="Approve").click()
            expect(page.locator(".note.ok")).to_contain_text("customer-refund@2 written")
            assert version_of(page, "customer-refund") == "@2"
            assert version_of(page, "travel-booking") == "@1"
            expect(page.locator(f"#item-{stage.item_id}")).to_have_count(0)

            labelled = page.locator("section[aria-label='Label rollouts'] details").first
            labelled.locator("summary").click()
            labelled.get_by_role("button", name="Good", exact=True).click()
            expect(page.locator(".note.ok")).to_contain_text("good")
            # The page renders to a screenshot every run; docs/ is refreshed only on request
            # (UPDATE_DOCS_SCREENSHOT=1), so a test run leaves the working tree clean.
            shot = SCREENSHOT if os.environ.get("UPDATE_DOCS_SCREENSHOT") else tmp_path / "p.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000

            cookie = {c["name"]: c["value"] for c in page.context.cookies()}["js_session"]
            page.get_by_role("button", name="Sign out").click()
            expect(page.get_by_role("heading", name="Sign in to review")).to_be_visible()
            assert blocked == []
        finally:
            browser.close()
    assert SCREENSHOT.stat().st_size > 10_000
    with httpx.Client(base_url=stage.url) as http:
        headers = {"Authorization": f"Bearer {stage.reviewer}"}
        figures = http.get("/v1/judges/agreement", headers=headers).json()
        assert figures["judges"][0]["labels"] == 1
        decided = http.get(f"/v1/review/{stage.item_id}", headers=headers).json()
        assert decided["decisions"][0]["note"] == "both failures skipped the order lookup"
    with httpx.Client(base_url=stage.url, cookies={"js_session": cookie}) as copied:
        assert "Sign in to review" in copied.get("/review").text  # signed out on the server


def test_bearer_roles_and_the_csrf_guard(stage: Stage):
    with httpx.Client(base_url=stage.url, follow_redirects=False) as http:
        page = http.get("/review", headers={"Authorization": f"Bearer {stage.reviewer}"})
        assert page.status_code == 200 and "Sign out" in page.text
        assert "looks-correct-and-complete" in page.text
        assert http.get("/review").status_code == 200  # the sign-in form, no redirect
        trainer = http.get("/review", headers={"Authorization": f"Bearer {stage.trainer}"})
        assert trainer.status_code == 403
        refused = http.post("/review/login", data={"key": stage.trainer})
        assert refused.status_code == 403 and "js_session" not in refused.cookies
        assert http.post("/review/login", data={"key": "nope"}).status_code == 401

    with httpx.Client(base_url=stage.url, follow_redirects=False) as browser:
        signed_in = browser.post("/review/login", data={"key": stage.reviewer})
        assert signed_in.status_code == 303
        cookie = signed_in.headers["set-cookie"]
        assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
        assert stage.reviewer not in cookie  # a session token, not the key
        forged = browser.post(
            f"/review/items/{stage.item_id}/decision", data={"decision": "approve"}
        )
        assert forged.status_code == 403 and "CSRF" in forged.text
        assert browser.get(f"/v1/review/{stage.item_id}").status_code == 401  # no cookie API
        bearer = {"Authorization": f"Bearer {stage.reviewer}"}
        item = browser.get(f"/v1/review/{stage.item_id}", headers=bearer).json()
        assert item["status"] == "pending"
