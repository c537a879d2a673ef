"""The run page's truths (issue 37) as real headless Chromium draws them, and long texts
kept inside their cards on the run and review pages.

The pages are rendered by the service (the run page through the API, the review page's
template with a long decision) and loaded into the browser as they are. The run page with
four equal hack kinds and a null step is docs/run-page.png (refreshed with
UPDATE_DOCS_SCREENSHOT=1).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from fastapi.testclient import TestClient
from playwright.sync_api import Page, sync_playwright

from judge_service.core.api.web.pages import render_text
from tests.conftest import ROOT
from tests.review.test_review_page import ARGS, CHROMIUM
from tests.runs.test_run_page_truth import KINDS, stored_run

SCREENSHOT = ROOT / "docs" / "run-page.png"
RUN = "grpo-refund-agent-7b-lr3e-6-seed17"
LONG = "x" * 300  # one unbroken word, far wider than any card
#: Cards whose content is wider than they are, as ``selector#index: scrollWidth > clientWidth``.
OVERFLOWING = """sel => [...document.querySelectorAll(sel)].flatMap((el, i) =>
    el.scrollWidth > el.clientWidth
        ? [`${sel}#${i}: ${el.scrollWidth} > ${el.clientWidth}`] : [])"""


def in_chromium(html: str, width: int, check) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.route("**/*", lambda route: route.abort())  # the page needs nothing else
            page.set_content(html)
            check(page)
        finally:
            browser.close()


def test_the_run_page_in_chromium_shows_four_kinds_and_a_gap(
    client: TestClient, keys, embedded_settings, tmp_path: Path
):
    stored_run(embedded_settings.database_url, RUN)
    html = client.get(f"/runs/{RUN}", headers=keys["reviewer"]).text

    def check(page: Page) -> None:
        boxes = []
        for kind in sorted(KINDS):
            line = page.locator(f"#hacks-kind-{kind} path").first
            assert line.is_visible(), kind
            box = line.bounding_box()
            assert box is not None and box["width"] > 100
            boxes.append(round(box["y"], 1))
        assert len(set(boxes)) == 4, boxes  # four lines at four heights, none hidden
        gap = page.locator("#no_advantage-no_advantage_share path").first
        assert gap.get_attribute("d").count("M") == 2  # type: ignore[union-attr]
        assert page.locator("[data-note=hacks]").is_visible()
        assert page.evaluate(OVERFLOWING, ".card, .tile") == []
        shot = SCREENSHOT if os.environ.get("UPDATE_DOCS_SCREENSHOT") else tmp_path / "run.png"
        bottom = page.locator("section.plots").bounding_box()
        assert bottom is not None
        height = bottom["y"] + bottom["height"] + 16
        clip = {"x": 0, "y": 0, "width": 1000, "height": height}
        page.screenshot(path=str(shot), clip=clip, full_page=True)  # the tiles and the plots
        assert 20_000 < shot.stat().st_size < 400_000

    in_chromium(html, 1000, check)


def test_long_recent_decisions_wrap_in_their_card(tmp_path: Path):
    decision = SimpleNamespace(
        item_id=7,
        decision="approve",
        reviewer="r" * 64,
        at=datetime(2025, 1, 2, 3, 4, tzinfo=UTC),
        outcome="customer-refund@2 written: " + LONG,
    )
    html = render_text(
        "review.html",
        key=SimpleNamespace(name="reviewer", id="k1", role="reviewer"),
        csrf="c",
        items=[],
        kinds=(),
        kind=None,
        run_id="",
        rubrics=[],
        rollouts=[],
        label_counts={},
        decisions=[decision],
    )
    assert LONG in html

    def check(page: Page) -> None:
        card = page.locator("section[aria-label='Recent decisions']")
        assert card.is_visible()
        sizes = card.evaluate("el => [el.scrollWidth, el.clientWidth]")
        assert sizes[0] <= sizes[1], sizes
        assert page.evaluate(OVERFLOWING, ".card") == []

    in_chromium(html, 1360, check)
