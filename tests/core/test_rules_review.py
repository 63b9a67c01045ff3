"""Rules of the reference's tutorial that a review found no test would catch, one test each
(each failed against a deliberately broken copy of the engine)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import django_workflows as wf
from django_workflows import NonRetryableStepError

pytestmark = pytest.mark.django_db


def charge_step(ctx, world):
    return ctx.step(
        "charge",
        lambda step: world.charge({"id": "x", "total": 1}, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )


def test_after_commit_a_failure_ends_failed_with_its_error_and_undoes_nothing(
    define, world, workflow_clock
):
    @define("commit-fail")
    def run(ctx, input):
        charge_step(ctx, world)
        ctx.commit("delivered")

        def review(step):
            raise NonRetryableStepError("mail down")

        ctx.step("review", review, compensate=lambda result, step: world.refund("x", "y"))

    wf.start("commit-fail", None, id="cf")
    wf.drain()
    status = wf.get_status("cf")
    assert (status.status, status.error["name"], status.error["step"]) == (
        "failed",
        "StepFailedError",
        "review",
    )
    assert world.refunds == {}


def test_terminate_while_compensating_stops_after_the_running_compensation(
    define, world, workflow_clock
):
    world.failures["release"] = 1  # the release fails once: the undo parks for its retry

    @define("term-comp")
    def run(ctx, input):
        charge_step(ctx, world)
        ctx.step(
            "reserve",
            lambda step: world.reserve(
                [{"product": "kibble", "quantity": 1}], step.idempotency_key
            ),
            compensate=lambda reservation, step: world.release(reservation["reservation_id"]),
        )
        ctx.fail("boom")

    wf.start("term-comp", None, id="tc")
    wf.drain()
    assert wf.get_status("tc").status == "compensating"
    assert wf.terminate("tc", "by hand").accepted
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status("tc")
    assert status.status == "cancelled"
    assert status.error == {"name": "WorkflowTerminatedError", "message": "by hand"}
    assert world.refunds == {}  # the charge's compensation never ran


def test_sleep_until_an_aware_datetime(define, workflow_clock):
    @define("sleep-until")
    def run(ctx, input):
        ctx.sleep("nap", until=ctx.now() + timedelta(hours=5))
        return "ok"

    started = workflow_clock.now()
    wf.start("sleep-until", None, id="su")
    wf.drain()
    assert wf.get_status("su").wake_at == started + timedelta(hours=5)
    workflow_clock.advance("5h")
    wf.drain()
    assert wf.get_status("su").output == "ok"


def test_only_the_winning_signal_is_taken_a_later_wait_takes_the_other(define, workflow_clock):
    @define("loser-later")
    def run(ctx, input):
        first = ctx.wait_for_any("w1", a=ctx.signal_wait("a"), b=ctx.signal_wait("b"))
        second = ctx.wait_for_signal("w2", "b")
        return [first.key, second]

    wf.start("loser-later", None, id="ll")
    wf.signal("a", 1)
    wf.signal("b", 2)
    wf.drain()
    assert wf.get_status("ll").output == ["a", 2]


def test_waits_in_a_gather_each_journal_on_their_own_and_park_once_for_all(define, workflow_clock):
    @define("gather-waits")
    def run(ctx, input):
        return ctx.gather(
            lambda: ctx.wait_for_signal("wa", "a"), lambda: ctx.wait_for_signal("wb", "b")
        )

    wf.start("gather-waits", None, id="gw")
    wf.drain()
    status = wf.get_status("gw")
    assert status.status == "suspended" and {w.signal for w in status.waits} == {"a", "b"}
    wf.signal("a", 1)
    wf.drain()
    status = wf.get_status("gw")
    assert status.status == "suspended" and {w.signal for w in status.waits} == {"b"}
    wf.signal("b", 2)
    wf.drain()
    assert wf.get_status("gw").output == [1, 2]


def test_a_step_result_comes_back_in_its_json_form_on_the_first_run_too(define, workflow_clock):
    got = []

    @define("tuple-result")
    def run(ctx, input):
        got.append(ctx.step("t", lambda step: (1, 2)))

    wf.start("tuple-result", None, id="tr")
    wf.drain()
    assert got == [[1, 2]]


def test_starting_with_an_old_definition_starts_the_highest_version(workflow_clock):
    from tests.testapp.workflows import versioned_v1

    assert wf.start(versioned_v1, None, id="v").version == 2


class FixedClock:
    """A clock of the application's own, set by the CLOCK setting."""

    def __init__(self) -> None:
        self.at = datetime(2030, 5, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at


def test_the_clock_setting_takes_any_clock(settings, define):
    @define("clocked")
    def clocked(ctx, input):
        ctx.sleep("nap", "1h")
        return ctx.now().isoformat()

    clock = FixedClock()
    settings.DJANGO_WORKFLOWS = {"CLOCK": clock}
    wf.start("clocked", None, id="ck")
    wf.drain()
    status = wf.get_status("ck")
    assert status.created_at == clock.at and status.wake_at == clock.at + timedelta(hours=1)
    clock.at += timedelta(hours=1)
    wf.drain()
    assert wf.get_status("ck").output == "2030-05-01T01:00:00+00:00"
