"""The workflows the update tests share, registered for each test that asks for them."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError


@pytest.fixture
def fulfil_order(define):
    """Waits for the update "change-address" (with the input's timeout), then for "add-note"
    as many times as the input's "notes" says; returns what it got. Its validator refuses an
    address without a postcode, and any change once the instance's input says it shipped."""

    @define("fulfil-order-updates")
    def fulfil(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
        address = ctx.wait_for_update("change-address", timeout=input.get("timeout"))
        notes = [ctx.wait_for_update("add-note") for _ in range(input.get("notes", 0))]
        return {"address": address, "notes": notes}

    @fulfil.validator("change-address")
    def check_address(status: Any, arg: Any) -> str | None:
        if status.input.get("shipped"):
            return "The order has shipped."
        if not isinstance(arg, dict) or not arg.get("postcode"):
            raise ValidationError("An address needs a postcode.")
        return None

    return fulfil
