"""Sessions that can't be ridden: the review page's cookie drives the HTML forms only.

The exploit of issue 17: a page on another port of the same host posts, with only an
admin's or reviewer's cookie, to the JSON API (``text/plain`` bodies, which need no CORS
preflight) or to the review forms. Each way must be refused and change nothing; signing
out must kill a copied cookie on the server; pages carry their security headers.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from judge_service.core.api.headers import PAGE_POLICY
from judge_service.core.settings import Settings
from judge_service.core.storage import web_sessions
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import ApiKeyRow, WebSessionRow
from judge_service.core.storage.types import utcnow
from judge_service.review.job_review_enqueue import enqueue_review
from judge_service.rubrics.tables import HumanLabelRow
from tests.review.test_review_queue import flagged_batch

OWN = "http://testserver"  # the TestClient's origin
ELSEWHERE = "http://testserver:8001"  # same host, another port: same-site, not same-origin


def plain(headers: dict[str, str]) -> str:
    return headers["Authorization"].split()[1]


def key_count(url: str) -> int:
    with session_scope(url) as session:
        return session.scalar(select(func.count()).select_from(ApiKeyRow)) or 0


def sign_in(client: TestClient, key: str) -> str:
    answer = client.post("/review/login", data={"key": key}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return answer.cookies["js_session"]


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)


@pytest.fixture
def url(embedded_settings: Settings) -> str:
    return embedded_settings.database_url


@pytest.fixture
def item(client: TestClient, keys: dict[str, Any], url: str) -> int:
    """One pending review item (a suspected hack), as the audit leaves it."""
    enqueue_review(flagged_batch(url, [0.92]), database_url=url)
    items = client.get("/v1/review", headers=keys["reviewer"]).json()["items"]
    assert len(items) == 1
    return items[0]["id"]


def status_of(client: TestClient, keys: dict[str, Any], item_id: int) -> str:
    return client.get(f"/v1/review/{item_id}", headers=keys["reviewer"]).json()["status"]


def test_a_cookie_alone_cannot_drive_the_json_api(client: TestClient, keys, url: str, item: int):
    sign_in(client, plain(keys["admin"]))  # the client keeps the cookie, like a browser
    before = key_count(url)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        forged = client.post(
            "/v1/keys",
            content=b'{"role": "admin"}',
            headers={"content-type": content_type, "origin": ELSEWHERE},
        )
        assert forged.status_code == 415, (content_type, forged.text)
        assert forged.json()["error"]["code"] == "unsupported_media_type"
        assert content_type in forged.json()["error"]["message"]
    as_json = client.post("/v1/keys", json={"role": "admin"}, headers={"origin": ELSEWHERE})
    assert as_json.status_code == 401
    assert "Bearer" in as_json.json()["error"]["message"]
    assert "cookie" in as_json.json()["error"]["message"]
    token = client.cookies["js_session"]
    as_bearer = client.post(
        "/v1/keys", json={"role": "admin"}, headers={"authorization": f"Bearer {token}"}
    )
    assert as_bearer.status_code == 401  # the session token is not a key either
    assert key_count(url) == before

    decided = client.post(f"/v1/review/{item}/decision", json={"decision": "approve"})
    assert decided.status_code == 401
    assert client.get("/v1/review").status_code == 401  # reads too
    assert status_of(client, keys, item) == "pending"

    made = client.post("/v1/keys", json={"role": "reviewer"}, headers=keys["admin"])
    assert made.status_code == 201 and key_count(url) == before + 1  # Bearer keys still work


def test_json_routes_take_json_types_only(client: TestClient, keys, url: str):
    before = key_count(url)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
        headers = {**keys["admin"], "content-type": content_type}
        answer = client.post("/v1/keys", content=b'{"role": "trainer"}', headers=headers)
        assert answer.status_code == 415, (content_type, answer.text)
        assert answer.json()["error"]["detail"]["content_type"] == (content_type or None)
    assert key_count(url) == before
    vendor = {**keys["admin"], "content-type": "application/vnd.judge+json; charset=utf-8"}
    answer = client.post("/v1/keys", content=b'{"role": "trainer"}', headers=vendor)
    assert answer.status_code == 201, answer.text
    rewards = client.post(
        "/get_reward", content=b'{"query": ["x"]}', headers={**keys["trainer"], "content-type": ""}
    )
    assert rewards.status_code == 415


def test_forms_need_this_origin_and_the_sessions_csrf_token(
    client: TestClient, keys, url: str, item: int
):
    sign_in(client, plain(keys["reviewer"]))
    csrf = csrf_of(client.get("/review").text)
    decide = f"/review/items/{item}/decision"
    refusals = [
        ({"decision": "approve"}, {}),
        ({"decision": "approve", "csrf": "0" * 32}, {}),
        ({"decision": "approve", "csrf": csrf}, {"origin": ELSEWHERE}),
        ({"decision": "approve", "csrf": csrf}, {"origin": "null"}),
        ({"decision": "approve", "csrf": csrf}, {"sec-fetch-site": "same-site"}),
        ({"decision": "approve", "csrf": csrf}, {"sec-fetch-site": "cross-site", "origin": OWN}),
    ]
    for form, headers in refusals:
        answer = client.post(decide, data=form, headers=headers, follow_redirects=False)
        assert answer.status_code == 403, (form, headers, answer.text)
        assert "This form was refused" in answer.text
    assert status_of(client, keys, item) == "pending"

    other = TestClient(client.app)
    sign_in(other, plain(keys["admin"]))
    stolen = other.post(decide, data={"decision": "approve", "csrf": csrf}, follow_redirects=False)
    assert stolen.status_code == 403  # one session's token is no good for another

    label = {"batch_id": "hb" + "0" * 30, "sample_id": "h0", "label": "bad"}
    assert client.post("/review/label", data=label, follow_redirects=False).status_code == 403
    with session_scope(url) as session:
        assert session.scalar(select(func.count()).select_from(HumanLabelRow)) == 0

    same_origin = {"origin": OWN, "sec-fetch-site": "same-origin"}
    done = client.post(
        decide,
        data={"decision": "approve", "csrf": csrf},
        headers=same_origin,
        follow_redirects=False,
    )
    assert done.status_code == 303 and "approved" in done.headers["location"]
    assert status_of(client, keys, item) == "approved"


def test_signing_in_from_another_origin_is_refused(client: TestClient, keys):
    answer = client.post(
        "/review/login",
        data={"key": plain(keys["reviewer"])},
        headers={"sec-fetch-site": "same-site"},
        follow_redirects=False,
    )
    assert answer.status_code == 403 and "js_session" not in answer.cookies


def test_signing_out_revokes_the_session_on_the_server(
    client: TestClient, keys, url: str, item: int
):
    cookie = sign_in(client, plain(keys["reviewer"]))
    page = client.get(f"/review/items/{item}")
    assert page.status_code == 200 and "Sign out" in page.text
    csrf = csrf_of(page.text)
    forged = client.post("/review/logout", data={}, follow_redirects=False)
    assert forged.status_code == 403  # a page elsewhere cannot sign the reviewer out either
    assert client.get(f"/review/items/{item}").status_code == 200

    out = client.post("/review/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303 and 'js_session=""' in out.headers["set-cookie"]
    with session_scope(url) as session:
        row = session.get(WebSessionRow, web_sessions.token_hash(cookie))
        assert row is not None and row.revoked_at is not None

    copied = TestClient(client.app, cookies={"js_session": cookie})
    again = copied.get("/review")
    assert "Sign in to review" in again.text and "Your session ended" in again.text
    assert copied.get(f"/review/items/{item}").status_code == 401
    posted = copied.post(
        f"/review/items/{item}/decision",
        data={"decision": "approve", "csrf": csrf},
        follow_redirects=False,
    )
    assert posted.status_code == 303 and "session" in posted.headers["location"]
    assert status_of(client, keys, item) == "pending"


def test_revoking_the_key_or_expiry_ends_its_sessions(client: TestClient, keys, url: str):
    reviewer, admin = TestClient(client.app), TestClient(client.app)
    sign_in(reviewer, plain(keys["reviewer"]))
    admin_cookie = sign_in(admin, plain(keys["admin"]))
    assert "Sign out" in reviewer.get("/review").text and "Sign out" in admin.get("/runs").text

    with session_scope(url) as session:
        key_id = session.get(WebSessionRow, web_sessions.token_hash(admin_cookie)).key_id
        session.execute(update(ApiKeyRow).where(ApiKeyRow.id == key_id).values(revoked_at=utcnow()))
    assert admin.get("/runs").status_code == 401
    assert "Sign out" in reviewer.get("/review").text

    with session_scope(url) as session:
        session.execute(update(WebSessionRow).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert "Sign in to review" in reviewer.get("/review").text

    with session_scope(url) as session:  # a sign-in sweeps sessions that ended long ago
        long_ago = utcnow() - 2 * web_sessions.LIFETIME
        session.execute(update(WebSessionRow).values(expires_at=long_ago))
    sign_in(TestClient(client.app), plain(keys["reviewer"]))
    with session_scope(url) as session:
        assert session.scalar(select(func.count()).select_from(WebSessionRow)) == 1


def _page_headers_ok(answer: Any) -> None:
    assert answer.headers["content-type"].startswith("text/html"), answer.url
    assert answer.headers["content-security-policy"] == PAGE_POLICY, answer.url
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "same-origin"


def test_pages_send_security_headers_and_a_strict_cookie(client: TestClient, keys, item: int):
    _page_headers_ok(client.get("/review"))  # the sign-in form
    login = client.post(
        "/review/login", data={"key": plain(keys["reviewer"])}, follow_redirects=False
    )
    cookie = login.headers["set-cookie"].lower()
    assert "samesite=strict" in cookie and "httponly" in cookie
    assert plain(keys["reviewer"]).lower() not in cookie
    for path in ("/review", f"/review/items/{item}", "/review/items/999999", "/runs"):
        _page_headers_ok(client.get(path))
    _page_headers_ok(client.post("/review/logout", data={}, follow_redirects=False))  # 403 page
    assert "script-src 'self';" in PAGE_POLICY and "frame-ancestors 'none'" in PAGE_POLICY
    page = client.get("/review").text
    assert "<script" not in page and "onchange" not in page  # nothing the policy would block

    docs = client.get("/docs")
    assert "unsafe-inline" in docs.headers["content-security-policy"]  # its own policy kept
    assert docs.headers["x-frame-options"] == "DENY"

    for answer in (
        client.get("/healthz"),
        client.get("/v1/review"),
        client.post("/v1/keys", content=b"{}", headers={"content-type": "text/plain"}),
    ):
        assert answer.headers["x-content-type-options"] == "nosniff", answer.url
        assert "content-security-policy" not in answer.headers
