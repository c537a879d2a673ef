"""The run page in real headless Chromium, against a real ``judge-service serve`` process.

The browser asks for a run's page, is sent to the review sign-in, comes back to the run once
signed in, sees the four plots drawn and the alarms, follows a flagged rollout to its review
item, and finds the run in ``/runs``. Every request that leaves the service is refused and
counted: the page needs nothing from elsewhere. (docs/run-page.png is drawn by
tests/runs/test_run_page_truth_chromium.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from playwright.sync_api import Route, expect, sync_playwright

from tests.conftest import ROOT, make_key
from tests.helpers import Server, service_env
from tests.review.test_review_page import ARGS, CHROMIUM
from tests.runs.test_run_page import RUN, build_run

SCREENSHOT = ROOT / "docs" / "run-page.png"


def test_the_run_page_in_chromium(tmp_path: Path, migrated_sqlite_url: str):
    db = migrated_sqlite_url
    reviewer = make_key(db, "reviewer")
    bearer = {
        role: {"Authorization": f"Bearer {make_key(db, role)}"} for role in ("trainer", "reviewer")
    }
    server = Server(env=service_env(JS_DATABASE_URL=db), cwd=tmp_path, log=tmp_path / "serve.log")
    outside: list[str] = []

    def only_the_service(route: Route) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            build_run(http, bearer["trainer"], bearer["reviewer"])
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                context = browser.new_context(viewport={"width": 1360, "height": 1000})
                context.route("**/*", only_the_service)
                page = context.new_page()
                first = page.goto(f"{server.url}/runs/{RUN}")
                assert first is not None and first.status == 401
                page.get_by_label("API key").fill(reviewer)
                page.get_by_role("button", name="Sign in").click()
                expect(page).to_have_url(f"{server.url}/runs/{RUN}")

                plots = page.locator("figure.plot[data-plot] svg")  # the report's four
                expect(plots).to_have_count(4)
                expect(page.locator("figure.plot[data-tier-plot] svg")).to_have_count(1)
                for i in range(4):
                    box = plots.nth(i).bounding_box()
                    assert box is not None and box["width"] > 300 and box["height"] > 140
                expect(page.locator("[data-alarm=reward_up_hacks_up]")).to_be_visible()
                expect(page.locator("[data-alarm=reward_up_agreement_down]")).to_be_visible()
                expect(page.locator("#reward-alarm-reward_up_hacks_up")).to_be_visible()
                expect(page.locator("#hacks-hack_rate")).to_be_visible()
                expect(page.locator("#agreement-kappa")).to_be_visible()
                rows = page.locator("section[aria-label='Flagged rollouts'] tr[data-sample]")
                expect(rows).to_have_count(6)

                shot = tmp_path / "r.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 20_000

                rows.first.get_by_role("link").click()
                expect(page).to_have_url(re.compile(rf"{server.url}/review/items/\d+$"))
                expect(page.locator("article[data-kind=hack_finding]")).to_contain_text(
                    "Suspected reward hack"
                )
                page.get_by_role("link", name="Runs").click()
                listed = page.locator(f'tr[data-run="{RUN}"]')
                expect(listed).to_contain_text("3")
                listed.get_by_role("link", name=RUN).click()
                expect(page.locator("figure.plot[data-plot] svg")).to_have_count(4)
            finally:
                browser.close()
    finally:
        server.kill()
    assert outside == []
    assert SCREENSHOT.stat().st_size > 20_000
