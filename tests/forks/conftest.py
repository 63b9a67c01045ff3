from __future__ import annotations

from collections import Counter

import pytest

import django_workflows as wf
from django_workflows.engine.registry import registry


@pytest.fixture
def runs():
    """How often each step's function ran (the side effects a fork must not repeat)."""
    return Counter()


@pytest.fixture
def shipping(define, runs):
    """`shipping(broken=...)` registers "shipping" (charge, pack, ship), replacing the code
    registered before, as a deploy does: with `broken`, the ship step fails on a bug."""
    registered = []

    def register(*, broken: bool):
        for definition in registered:
            registry.unregister(definition)

        @define("shipping")
        def shipping(ctx, input):
            def charge(step):
                runs["charge"] += 1
                runs[f"charge-key:{step.idempotency_key}"] += 1
                return {"charged": input["total"]}

            def pack(step):
                runs["pack"] += 1
                return {"parcel": f"parcel-{input['order']}"}

            def ship(step):
                runs["ship"] += 1
                if broken:
                    raise RuntimeError("the carrier's API takes grams, not kilograms")
                return {"tracking": f"track-{input['order']}"}

            charged = ctx.step("charge", charge)
            packed = ctx.step("pack", pack)
            shipped = ctx.step("ship", ship, retry=wf.Retry(attempts=1))
            return {**charged, **packed, **shipped, "order": input["order"]}

        registered.append(shipping)
        return shipping

    return register


@pytest.fixture
def failed_order(shipping, workflow_clock):
    """An order whose ship step failed on a bug; the fixed code is deployed after."""
    shipping(broken=True)
    wf.start("shipping", {"order": "o-1", "total": 2499}, id="order-1")
    wf.drain()
    assert wf.get_status("order-1").status == "failed"
    shipping(broken=False)
    return "order-1"
