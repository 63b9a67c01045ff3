"""ctx.patched() and ctx.deprecate_patch(): a change deployed in place, with instances of the
code before it still running. Each test runs the old code, then swaps the registered code for
the patched one (as a deploy does) and runs the instances again on a real worker."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

import django_workflows as wf
from django_workflows.engine.patches import LONGEST_ID
from tests.core.helpers import names
from tests.patches.conftest import NAME

pytestmark = pytest.mark.django_db


@pytest.fixture
def ran() -> list[str]:
    """The steps whose function ran, in order, as (instance id, step name) strings."""
    return []


@pytest.fixture
def answers() -> dict[str, list[bool]]:
    """What ctx.patched() answered, per instance id, execution after execution."""
    return {}


def _do(ran: list[str], ctx: Any, name: str) -> Any:
    return ctx.step(name, lambda step: ran.append(f"{ctx.instance_id}:{name}") or name)


def old_code(ran: list[str]) -> Callable[..., Any]:
    """Before the change: the receipt email, then a cool-off, the delivery, the review."""

    def fulfil(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
        _do(ran, ctx, "charge-payment")
        mail = _do(ran, ctx, "email-receipt")
        now = ctx.now()
        ctx.sleep("cool-off", "1h")
        delivery = ctx.wait_for_signal("await-delivery", "shipment.delivered", key=order["id"])
        _do(ran, ctx, "ask-for-review")
        return {"mail": mail, "now": now.isoformat(), "delivery": delivery}

    return fulfil


def patched_code(ran: list[str], answers: dict[str, list[bool]]) -> Callable[..., Any]:
    """The change: the order confirmation instead of the receipt, guarded by a patch."""

    def fulfil(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
        _do(ran, ctx, "charge-payment")
        taken = ctx.patched("order-confirmation")
        answers.setdefault(ctx.instance_id, []).append(taken)
        if taken:
            mail = _do(ran, ctx, "send-order-confirmation")
        else:
            mail = _do(ran, ctx, "email-receipt")
        now = ctx.now()
        ctx.sleep("cool-off", "1h")
        delivery = ctx.wait_for_signal("await-delivery", "shipment.delivered", key=order["id"])
        _do(ran, ctx, "ask-for-review")
        return {"mail": mail, "now": now.isoformat(), "delivery": delivery}

    return fulfil


def deprecated_code(ran: list[str]) -> Callable[..., Any]:
    """Once the old instances drained: the new branch only, after deprecate_patch()."""

    def fulfil(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
        _do(ran, ctx, "charge-payment")
        ctx.deprecate_patch("order-confirmation")
        mail = _do(ran, ctx, "send-order-confirmation")
        now = ctx.now()
        ctx.sleep("cool-off", "1h")
        delivery = ctx.wait_for_signal("await-delivery", "shipment.delivered", key=order["id"])
        _do(ran, ctx, "ask-for-review")
        return {"mail": mail, "now": now.isoformat(), "delivery": delivery}

    return fulfil


def final_code(ran: list[str]) -> Callable[..., Any]:
    """The guard removed: the new branch is the code."""

    def fulfil(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
        _do(ran, ctx, "charge-payment")
        mail = _do(ran, ctx, "send-order-confirmation")
        now = ctx.now()
        ctx.sleep("cool-off", "1h")
        delivery = ctx.wait_for_signal("await-delivery", "shipment.delivered", key=order["id"])
        _do(ran, ctx, "ask-for-review")
        return {"mail": mail, "now": now.isoformat(), "delivery": delivery}

    return fulfil


def _deliver(*ids: str) -> None:
    for id in ids:
        wf.signal("shipment.delivered", {"tracking": f"TRK-{id}"}, key=id)


def _marker(id: str) -> Any:
    status = wf.get_status(id, journal=True)
    found = [e for e in status.journal if e.name == "$patch:order-confirmation"]
    return found[0] if found else None


def test_an_old_instance_keeps_the_old_branch_through_a_sleep_and_a_signal(
    deploy, ran, answers, workflow_clock
):
    deploy(old_code(ran))
    wf.start(NAME, {"id": "old"}, id="old")
    wf.drain()
    assert wf.get_status("old").status == "suspended"  # at the cool-off
    started = workflow_clock.now()

    deploy(patched_code(ran, answers))
    wf.start(NAME, {"id": "new"}, id="new")
    wf.drain()
    assert answers == {"new": [True]}
    assert wf.get_status("new").status == "suspended"

    workflow_clock.advance("1h")  # both wake from the cool-off and wait for the delivery
    wf.drain()
    assert wf.get_status("old").status == "suspended"
    assert wf.get_status("new").status == "suspended"
    _deliver("old", "new")
    wf.drain()

    old, new = wf.get_status("old"), wf.get_status("new")
    assert old.status == "completed" and new.status == "completed"
    assert old.output["mail"] == "email-receipt"
    assert new.output["mail"] == "send-order-confirmation"
    # The patch takes no position: the old journal's ctx.now() after it is replayed, not new.
    assert datetime.fromisoformat(old.output["now"]) == started
    # Every execution of the old instance kept the old branch; every replay of the new one
    # took the new branch again.
    assert answers == {"old": [False, False], "new": [True, True, True]}
    assert ran.count("old:email-receipt") == 1 and "old:send-order-confirmation" not in ran
    assert ran.count("new:send-order-confirmation") == 1 and "new:email-receipt" not in ran
    assert names("old") == [
        "charge-payment",
        "email-receipt",
        "$now:2",
        "cool-off",
        "$patch:order-confirmation",
        "await-delivery",
        "ask-for-review",
    ]
    assert _marker("old").result is False
    assert names("new")[:3] == [
        "charge-payment",
        "$patch:order-confirmation",
        "send-order-confirmation",
    ]
    assert _marker("new").kind == "patch" and _marker("new").result is True


def test_an_old_instance_that_had_not_reached_the_change_takes_the_new_branch(
    deploy, ran, answers, workflow_clock
):
    def before(ctx: Any, order: dict[str, Any]) -> str:
        ctx.sleep("hold", "1h")
        return _do(ran, ctx, "email-receipt")

    def after(ctx: Any, order: dict[str, Any]) -> str:
        ctx.sleep("hold", "1h")
        taken = ctx.patched("order-confirmation")
        answers.setdefault(ctx.instance_id, []).append(taken)
        return _do(ran, ctx, "send-order-confirmation" if taken else "email-receipt")

    deploy(before)
    wf.start(NAME, {"id": "early"}, id="early")
    wf.drain()
    deploy(after)
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("early")
    assert status.status == "completed"
    assert status.output == "send-order-confirmation"
    assert answers == {"early": [True]}


def test_deprecate_patch_on_a_drained_deployment_and_then_the_guard_removed(
    deploy, ran, answers, workflow_clock
):
    deploy(patched_code(ran, answers))
    wf.start(NAME, {"id": "patched"}, id="patched")
    wf.drain()

    deploy(deprecated_code(ran))
    wf.start(NAME, {"id": "deprecated"}, id="deprecated")
    wf.drain()
    assert _marker("deprecated").result is True
    workflow_clock.advance("1h")
    wf.drain()  # the instance of the patched code replays its marker past deprecate_patch()

    deploy(final_code(ran))
    wf.start(NAME, {"id": "final"}, id="final")
    wf.drain()
    _deliver("patched", "deprecated", "final")
    workflow_clock.advance("1h")
    wf.drain()
    for id in ("patched", "deprecated", "final"):
        status = wf.get_status(id)
        assert status.status == "completed", (id, status.error)
        assert status.output["mail"] == "send-order-confirmation"
        assert ran.count(f"{id}:send-order-confirmation") == 1
    assert _marker("final") is None
    assert not any(entry.endswith("email-receipt") for entry in ran)


def test_deprecate_patch_fails_an_old_instance_that_had_not_drained(
    deploy, ran, answers, workflow_clock
):
    deploy(old_code(ran))
    wf.start(NAME, {"id": "old"}, id="old")
    wf.drain()
    deploy(deprecated_code(ran))
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("old")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowNonDeterminismError"
    assert 'deprecate_patch("order-confirmation")' in status.error["message"]
    assert "old:send-order-confirmation" not in ran


def test_removing_the_guard_while_old_instances_run_fails_them_and_only_them(
    deploy, ran, answers, workflow_clock
):
    deploy(old_code(ran))
    wf.start(NAME, {"id": "old"}, id="old")
    wf.drain()
    deploy(patched_code(ran, answers))
    wf.start(NAME, {"id": "new"}, id="new")
    wf.drain()
    deploy(final_code(ran))
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("new").status == "suspended"  # its marker is ignored by the check
    old = wf.get_status("old")
    assert old.status == "failed" and old.error["name"] == "WorkflowNonDeterminismError"


def test_one_patch_id_at_two_places_gets_the_first_answer_at_both(
    deploy, ran, answers, workflow_clock
):
    def before(ctx: Any, order: dict[str, Any]) -> list[str]:
        first = _do(ran, ctx, "a-old")
        ctx.sleep("between", "1h")
        return [first, _do(ran, ctx, "b-old")]

    def after(ctx: Any, order: dict[str, Any]) -> list[str]:
        first = _do(ran, ctx, "a-new" if ctx.patched("both") else "a-old")
        ctx.sleep("between", "1h")
        # At the journal's end for the old instance, yet its patch was decided at the first
        # place: it keeps the old branch here too.
        return [first, _do(ran, ctx, "b-new" if ctx.patched("both") else "b-old")]

    deploy(before)
    wf.start(NAME, {}, id="old")
    wf.drain()
    deploy(after)
    wf.start(NAME, {}, id="new")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("old").output == ["a-old", "b-old"]
    assert wf.get_status("new").output == ["a-new", "b-new"]
    assert names("new").count("$patch:both") == 1


def test_a_patch_in_a_gather_branch_ignores_the_other_branches_entries(
    deploy, ran, answers, workflow_clock
):
    def before(ctx: Any, order: dict[str, Any]) -> list[Any]:
        def passed() -> str:
            return _do(ran, ctx, "a-old")

        def after_the_others(step: Any) -> str:
            # Once this branch's sleep parks the instance, new steps in the others wait for its
            # wake: the others' steps run first here, however the threads are scheduled.
            deadline = time.monotonic() + 30
            while not {"old:a-old", "old:c"} <= set(ran) and time.monotonic() < deadline:
                time.sleep(0.01)
            ran.append("old:b-first")
            return "b-first"

        def waiting() -> str:
            ctx.step("b-first", after_the_others)
            ctx.sleep("b-hold", "1h")
            return _do(ran, ctx, "b-old")

        def other() -> str:
            return _do(ran, ctx, "c")

        return ctx.gather(passed, waiting, other)

    def after(ctx: Any, order: dict[str, Any]) -> list[Any]:
        def passed() -> str:
            taken = ctx.patched("a")
            return _do(ran, ctx, "a-new" if taken else "a-old")

        def waiting() -> str:
            _do(ran, ctx, "b-first")
            ctx.sleep("b-hold", "1h")
            taken = ctx.patched("b")  # the branch had not got here: "c", "a-old" are others'
            return _do(ran, ctx, "b-new" if taken else "b-old")

        def other() -> str:
            return _do(ran, ctx, "c")

        return ctx.gather(passed, waiting, other)

    deploy(before)
    wf.start(NAME, {}, id="old")
    wf.drain()
    assert wf.get_status("old").status == "suspended"
    assert set(names("old")) == {"a-old", "b-first", "b-hold", "c"}
    deploy(after)
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("old")
    assert status.status == "completed", status.error
    assert status.output == ["a-old", "b-new", "c"]


def test_a_patch_id_and_a_step_name_do_not_collide(deploy, ran, events):
    def fulfil(ctx: Any, order: dict[str, Any]) -> list[Any]:
        first = _do(ran, ctx, "order-confirmation")
        return [first, ctx.patched("order-confirmation"), ctx.patched("order-confirmation")]

    deploy(fulfil)
    wf.start(NAME, {}, id="both")
    wf.drain()
    assert wf.get_status("both").output == ["order-confirmation", True, True]
    assert names("both") == ["order-confirmation", "$patch:order-confirmation"]
    marked = [e for e in events if e.type == "patch-marked"]
    assert [(e.id, e.data) for e in marked] == [
        ("both", {"patch": "order-confirmation", "taken": True, "deprecated": False})
    ]


def test_the_longest_patch_id_fits_the_journal(deploy):
    longest = "p" * LONGEST_ID

    def fulfil(ctx: Any, order: dict[str, Any]) -> bool:
        return ctx.patched(longest)

    deploy(fulfil)
    wf.start(NAME, {}, id="long")
    wf.drain()
    assert wf.get_status("long").output is True
    assert names("long") == [f"$patch:{longest}"]


@pytest.mark.parametrize(
    ("patch_id", "error", "says"),
    [
        ("", "TypeError", "needs patch_id, a non-empty string"),
        (None, "TypeError", "needs patch_id, a non-empty string"),
        (7, "TypeError", "got 7"),
        ("p" * (LONGEST_ID + 1), "ValueError", f"the most it can be is {LONGEST_ID}"),
        ("a\x00b", "UnstorableValueError", "NUL"),
    ],
)
@pytest.mark.parametrize("call", ["patched", "deprecate_patch"])
def test_a_bad_patch_id_fails_the_instance_with_a_clear_error_and_journals_nothing(
    deploy, ran, call, patch_id, error, says
):
    def fulfil(ctx: Any, order: dict[str, Any]) -> Any:
        _do(ran, ctx, "charge-payment")
        return getattr(ctx, call)(patch_id)

    deploy(fulfil)
    wf.start(NAME, {}, id="bad")
    wf.drain()
    status = wf.get_status("bad")
    assert status.status == "failed"
    assert status.error["name"] == error
    assert says in status.error["message"] and f"ctx.{call}()" in status.error["message"]
    assert names("bad") == ["charge-payment"]


@pytest.mark.parametrize("call", ["patched", "deprecate_patch"])
def test_a_patch_inside_a_step_fails_the_instance(deploy, call):
    def fulfil(ctx: Any, order: dict[str, Any]) -> Any:
        return ctx.step("inside", lambda step: getattr(ctx, call)("x"))

    deploy(fulfil)
    wf.start(NAME, {}, id="inside")
    wf.drain()
    status = wf.get_status("inside")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert f'ctx.{call}("x") was called inside a step' in status.error["message"]
    assert "$patch:x" not in names("inside")
