"""``parse_retry_after``: the one reading of a Retry-After header, for the model client (a judge
server's 429) and trainer_bridge (the service's 503) alike."""

from __future__ import annotations

import email.utils
import time

import pytest

from judge_service.wire import parse_retry_after


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), ("1.5", 1.5), ("0", 0.0), ("-3", 0.0), (" 2 ", 2.0), (None, None),
     ("soon", None), ("", None), ("inf", None), ("nan", None),
     ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],  # a date in the past: now
)  # fmt: skip
def test_delta_seconds_and_what_is_not_a_hint(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


def test_an_http_date_is_the_seconds_until_it() -> None:
    at = email.utils.formatdate(time.time() + 30, usegmt=True)
    wait = parse_retry_after(at)
    assert wait is not None and 28.0 <= wait <= 30.0
