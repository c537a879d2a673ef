"""Checked keys are trusted for ``JS_KEY_CACHE_S``, then read again; revocation still works."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient
from sqlalchemy import update

from judge_service.core.api.app import create_app
from judge_service.core.api.key_cache import MAX_KEYS, CheckedKeys
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import ApiKeyRow
from tests.conftest import make_key

GOOD = {
    "samples": [{"id": "a", "prompt": "p", "completion": "c"}],
    "judges": [{"name": "slow_constant", "delay_s": 0}],
}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def row(key_id: str = "k1") -> ApiKeyRow:
    return ApiKeyRow(id=key_id, role="trainer", key_hash="0" * 64)


def test_a_checked_key_is_trusted_until_its_time_is_up():
    clock = Clock()
    keys = CheckedKeys(5.0, clock=clock)
    assert keys.get("js_a") is None
    checked = row()
    keys.put("js_a", checked)
    clock.now += 4.9
    assert keys.get("js_a") is checked
    assert keys.get("js_b") is None  # another key is not this one
    clock.now += 0.2
    assert keys.get("js_a") is None


def test_zero_seconds_keeps_nothing():
    keys = CheckedKeys(0.0, clock=Clock())
    keys.put("js_a", row())
    assert keys.get("js_a") is None


def test_the_cache_stays_bounded_and_keeps_what_is_still_fresh():
    clock = Clock()
    keys = CheckedKeys(5.0, clock=clock)
    for n in range(MAX_KEYS):
        keys.put(f"js_old_{n}", row(f"o{n}"))
    clock.now += 10  # all of those have expired
    keys.put("js_new", row("new"))
    assert len(keys._rows) == 1
    assert keys.get("js_new").id == "new"


def _revoke_all(url: str) -> None:
    with session_scope(url) as session:
        session.execute(update(ApiKeyRow).values(revoked_at=datetime.now(UTC)))


def test_a_revoked_key_is_refused_once_its_check_expires(embedded_settings):
    url = embedded_settings.database_url
    headers = {"Authorization": f"Bearer {make_key(url, 'trainer')}"}
    app = create_app(embedded_settings)
    clock = Clock()
    app.state.checked_keys = CheckedKeys(5.0, clock=clock)
    with TestClient(app) as client:
        assert client.post("/v1/rewards", json=GOOD, headers=headers).status_code == 200
        _revoke_all(url)
        # within JS_KEY_CACHE_S the key checked a moment ago still passes ...
        assert client.post("/v1/rewards", json=GOOD, headers=headers).status_code == 200
        clock.now += 5.0
        # ... and once that has passed it is read again, and refused
        refused = client.post("/v1/rewards", json=GOOD, headers=headers)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthorized"


def test_without_the_cache_a_revoked_key_is_refused_at_once(embedded_settings):
    url = embedded_settings.database_url
    headers = {"Authorization": f"Bearer {make_key(url, 'trainer')}"}
    settings = embedded_settings.model_copy(update={"key_cache_s": 0.0})
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/rewards", json=GOOD, headers=headers).status_code == 200
        _revoke_all(url)
        assert client.post("/v1/rewards", json=GOOD, headers=headers).status_code == 401
