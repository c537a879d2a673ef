"""``/docs`` and ``/redoc`` work offline: every asset comes from the service itself.

Plain HTTP checks read the pages' asset URLs and fetch each one; then real headless Chromium
(Debian's ``chromium``, driven by Playwright), with every request that does not go to the
service refused and every host name unresolvable, renders Swagger UI and ReDoc.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Route, expect, sync_playwright

from tests.helpers import Server, service_env
from tests.review.test_review_page import ARGS, CHROMIUM

#: Any absolute URL in a page (in an attribute or a script).
ABSOLUTE = re.compile(r"""(?:https?:)?//[^\s"'<>)]+""")
ASSET = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']|url:\s*["']([^"']+)["']""")
CONTENT_TYPES = {
    ".js": "javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".json": "application/json",
}


def assets(page: str) -> list[str]:
    """The URLs a docs page loads: scripts, styles, the icon and the OpenAPI document."""
    return [a or b for a, b in ASSET.findall(page)]


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_docs_pages_name_no_outside_url(client: TestClient, path: str) -> None:
    page = client.get(path)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    # The browser may load nothing from elsewhere, whatever the bundled scripts ask for.
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert not ABSOLUTE.findall(policy) and "*" not in policy, policy
    outside = ABSOLUTE.findall(page.text)
    assert outside == [], f"{path} refers outside the service: {outside}"
    found = assets(page.text)
    assert any(url.endswith(".js") for url in found), found
    assert "/openapi.json" in found
    if path == "/docs":
        assert any(url.endswith(".css") for url in found), found
    for url in found:
        assert url.startswith("/"), f"{path}: {url} is not the service's own"
        answer = client.get(url)
        assert answer.status_code == 200, f"{url}: {answer.status_code}"
        expected = CONTENT_TYPES[Path(urlsplit(url).path).suffix]
        assert expected in answer.headers["content-type"], (url, answer.headers)
        assert len(answer.content) > 100, url


def test_the_assets_are_open_like_the_docs(client: TestClient) -> None:
    """No key needed: the docs pages are open, and so must be what they load."""
    for url in assets(client.get("/docs").text):
        assert client.get(url, headers={}).status_code == 200


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = service_env(JS_DATABASE_URL=f"sqlite:///{tmp_path / 'docs.db'}")
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        yield server
    finally:
        server.kill()


def test_docs_render_in_chromium_with_the_network_blocked(server: Server) -> None:
    own = urlsplit(server.url).netloc
    refused: list[str] = []

    def only_the_service(route: Route) -> None:
        if urlsplit(route.request.url).netloc == own:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort("internetdisconnected")

    # Host names resolve nowhere, as on a machine with no network; the service is reached
    # by address.
    offline = [*ARGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=offline)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", only_the_service)
            failed: list[tuple[str, str | None]] = []
            page.on("requestfailed", lambda req: failed.append((req.url, req.failure)))

            page.goto(f"{server.url}/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("judge-service")
            rewards = page.locator(".opblock-summary-path", has_text="/v1/rewards")
            expect(rewards.first).to_be_visible()

            page.goto(f"{server.url}/redoc")
            expect(page.locator("h1")).to_contain_text("judge-service")
            expect(page.get_by_text("/v1/rewards").first).to_be_attached()
        finally:
            browser.close()
    # Nothing reached the network for another host, nothing of the service's own failed; the
    # one thing ReDoc's bundle asks elsewhere (its vendor's logo) the page's policy stopped.
    assert refused == [], f"the docs asked outside the service: {refused}"
    assert [url for url, _ in failed if urlsplit(url).netloc == own] == [], failed
    assert all("csp" in (why or "").lower() for _, why in failed), failed
