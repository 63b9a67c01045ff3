"""Fixtures of the replay check's tests: an `order` workflow parked at a sleep and a `signup`
workflow parked at a signal, a counter of the step functions that ran, and `deploy()`, which
replaces a workflow's registered code in place (same name, same version) as a deploy does."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.apps import apps

import django_workflows as wf
from django_workflows.engine.registry import registry

ran: Counter[str] = Counter()
"""How often each step function ran, by step name."""


def effect(name: str, result: Any = None):
    """A step function that counts its runs."""

    def run(step):
        ran[name] += 1
        return result if result is not None else f"{name}-done"

    return run


def order_v1(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.step("charge", effect("charge"))
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))
    return "shipped"


def signup_v1(ctx, input):
    ctx.step("create", effect("create"))
    confirmed = ctx.wait_for_signal("confirmation", "confirmed", key=input["user"])
    ctx.step("welcome", effect("welcome"))
    return confirmed


@pytest.fixture
def deploy(define):
    """`deploy(name, fn, version=1)`: the registered code of name@version is now `fn`."""

    def replace(name: str, fn, *, version: int = 1):
        old = registry.get(name, version)
        if old is not None:
            registry.unregister(old)
        return define(name, version=version)(fn)

    return replace


@pytest.fixture
def parked(define, workflow_clock):
    """Two orders parked at their sleep and a signup parked at its signal, on the old code;
    the step counter reset once they parked."""
    define("order")(order_v1)
    define("signup")(signup_v1)
    wf.start("order", {"n": 1}, id="order-1")
    wf.start("order", {"n": 2}, id="order-2")
    wf.start("signup", {"user": "u1"}, id="signup-1")
    wf.drain()
    assert {wf.get_status(i).status for i in ("order-1", "order-2", "signup-1")} == {"suspended"}
    ran.clear()
    return ["order-1", "order-2", "signup-1"]


def rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of every django_workflows table, to compare before and after."""
    return {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in apps.get_app_config("django_workflows").get_models()
    }
