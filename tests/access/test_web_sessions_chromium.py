"""Issue 17's exploit, replayed in real headless Chromium against ``judge-service serve``.

An admin signs in to the review page. A page on another port of the same host (same-site,
so even a ``SameSite=Strict`` cookie rides along) then posts ``{"role": "admin"}`` to
``POST /v1/keys`` and an approval to the JSON review API as ``text/plain`` (no CORS
preflight), and submits the review page's own form — with the session's real CSRF token,
as if it had leaked. Nothing may change: no new key, the item still pending.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from judge_service.review.job_review_enqueue import enqueue_review
from tests.access.test_web_sessions import csrf_of, key_count
from tests.conftest import make_key
from tests.helpers import Server, service_env
from tests.review.test_review_page import ARGS, CHROMIUM
from tests.review.test_review_queue import flagged_batch

ATTACK = """<!doctype html><title>cat pictures</title>
<form id="ride" method="post" action="{service}/review/items/{item}/decision">
  <input name="decision" value="approve"><input name="csrf" value="{csrf}">
</form>
<script>
  const plain = {{"Content-Type": "text/plain"}};
  const post = (path, body) => fetch("{service}" + path, {{
    method: "POST", mode: "no-cors", credentials: "include", headers: plain, body: body,
  }});
  Promise.all([
    post("/v1/keys", '{{"role": "admin"}}'),
    post("/v1/review/{item}/decision", '{{"decision": "approve"}}'),
  ]).finally(() => document.getElementById("ride").submit());
</script>
"""


@pytest.fixture
def attacker() -> Iterator[tuple[str, dict[str, str]]]:
    """A server on another port of 127.0.0.1 that answers ``page["html"]`` to every GET."""
    page: dict[str, str] = {"html": ""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page["html"].encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", page
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_page_on_another_port_cannot_ride_the_session(
    tmp_path: Path, attacker: tuple[str, dict[str, str]], migrated_sqlite_url: str
):
    db = migrated_sqlite_url
    admin = make_key(db, "admin")
    enqueue_review(flagged_batch(db, [0.92]), database_url=db)
    bearer = {"Authorization": f"Bearer {admin}"}
    server = Server(env=service_env(JS_DATABASE_URL=db), cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=server.url, headers=bearer) as http:
            item = http.get("/v1/review").json()["items"][0]["id"]
        keys_before = key_count(db)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page()
                page.goto(f"{server.url}/review")
                page.get_by_label("API key").fill(admin)
                page.get_by_role("button", name="Sign in").click()
                expect(page.locator(".note.ok")).to_contain_text("Signed in")
                csrf = csrf_of(page.content())

                site, served = attacker
                served["html"] = ATTACK.format(service=server.url, item=item, csrf=csrf)
                page.goto(f"{site}/cats")  # the fetches, then the form (a top-level post)
                expect(page).to_have_url(f"{server.url}/review/items/{item}/decision")
                expect(page.locator("h2")).to_have_text("This form was refused")
                expect(page.locator("main")).to_contain_text("Sec-Fetch-Site: same-site")

                page.goto(f"{server.url}/review")  # the session itself still works here
                expect(page.locator(f"#item-{item}")).to_be_visible()
            finally:
                browser.close()
        with httpx.Client(base_url=server.url, headers=bearer) as http:
            assert http.get(f"/v1/review/{item}").json()["status"] == "pending"
        assert key_count(db) == keys_before
    finally:
        server.kill()
