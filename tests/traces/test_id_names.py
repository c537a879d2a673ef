"""Which fields name an object's id: by how fields are commonly named, in any style, never by
one domain's field names."""

from __future__ import annotations

import pytest

from judge_service.traces.entities import is_id_name


@pytest.mark.parametrize(
    "name",
    ["id", "order_id", "orderId", "booking_ref", "bookingRef", "line_number", "ticketNo",
     "promo_code", "voucherCode", "api_key", "customerKey"],
)  # fmt: skip
def test_id_fields_in_snake_and_camel_case(name: str) -> None:
    assert is_id_name(name)


@pytest.mark.parametrize(
    "name", ["zip_code", "postalCode", "country_code", "phone_number", "status", "keyboard"]
)
def test_codes_and_numbers_that_name_no_object(name: str) -> None:
    assert not is_id_name(name)
