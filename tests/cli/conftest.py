"""Fixtures of the command line's tests: `run(...)`, which calls `manage.py workflows ...`
through call_command, and `instances`, a set of instances in known states."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

import django_workflows as wf


def run(*args: str) -> tuple[int, str, str]:
    """`manage.py workflows *args`: its exit status, its output and its error output."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("workflows", *args, stdout=out, stderr=err)
        status = 0
    except SystemExit as exit:
        status = int(exit.code or 0)
    return status, out.getvalue(), err.getvalue()


def charge_fails(step: Any) -> None:
    raise ValueError("card declined")


def order(ctx: Any, input: Any) -> str:
    ctx.step("reserve", lambda step: "reservation-77")
    ctx.set_value("stage", "reserved")
    ctx.sleep("cool-off", "1h")
    return "shipped"


def payment(ctx: Any, input: Any) -> None:
    ctx.step("charge", charge_fails, retry=wf.Retry(attempts=1))


def approval(ctx: Any, input: Any) -> str:
    ctx.breakpoint("approve")
    return "approved"


def signup(ctx: Any, input: Any) -> Any:
    return ctx.wait_for_signal("confirmation", "confirmed", key=input["user"])


@pytest.fixture(autouse=True)
def columns(monkeypatch):
    """An 80-column terminal, whatever runs the tests."""
    monkeypatch.setenv("COLUMNS", "80")


@pytest.fixture
def instances(define, workflow_clock):
    """order-1 suspended at its sleep, pay-1 failed, gate-1 at its breakpoint, signup-1 waiting
    for its confirmation, done-1 completed (an approval resumed), gpu-1 pending in queue gpu."""
    define("cli-order")(order)
    define("cli-payment")(payment)
    define("cli-approval")(approval)
    define("cli-signup")(signup)
    define("cli-gpu", queue="gpu")(order)
    wf.start("cli-order", {"n": 1}, id="order-1", tags=["vip"], attributes={"amount": 1200})
    wf.start("cli-payment", {"card": "4242"}, id="pay-1")
    wf.start("cli-approval", None, id="gate-1")
    wf.start("cli-signup", {"user": "u1"}, id="signup-1")
    wf.start("cli-approval", None, id="done-1")
    wf.drain()
    wf.resume("done-1")
    wf.drain()
    workflow_clock.advance("5m")
    wf.start("cli-gpu", None, id="gpu-1")
    return workflow_clock
