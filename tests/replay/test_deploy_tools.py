"""The replay check with the engine's other deploy tools: a patched change is compatible, and a
replay stops cleanly at ctx.continue_as_new()."""

from __future__ import annotations

import pytest

import django_workflows as wf

from .conftest import effect, ran, rows
from .test_checkworkflows import check, named

pytestmark = pytest.mark.django_db


def patched_order(ctx, input):
    ctx.step("reserve", effect("reserve"))
    if ctx.patched("charge-in-cents"):
        ctx.step("charge-cents", effect("charge-cents"))
    else:
        ctx.step("charge", effect("charge"))
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


def unguarded(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.step("charge-cents", effect("charge-cents"))
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


def test_a_patched_change_matches_old_and_new_instances(parked, deploy):
    deploy("order", patched_order)
    wf.start("order", {"n": 3}, id="order-3")  # on the patched code: the new branch
    wf.drain()
    assert ran == {"reserve": 1, "charge-cents": 1}
    ran.clear()
    before = rows()
    assert check() == (0, ["Replayed 4 instance(s): all match this code."])
    assert rows() == before
    assert not ran
    deploy("order", unguarded)  # the guard removed before the old instances drained
    status, lines = check()
    assert (status, named(lines)) == (1, ["order-1", "order-2"])


def batches(ctx, input):
    ctx.step("batch", effect("batch"))
    ctx.sleep("pause", "1h")
    if input["round"] < 3:
        ctx.continue_as_new({"round": input["round"] + 1})
    return input["round"]


def test_a_continue_as_new_at_the_frontier_stops_the_replay_cleanly(define, deploy, workflow_clock):
    define("batches")(batches)
    wf.start("batches", {"round": 1}, id="looping")
    wf.drain()
    workflow_clock.advance("2h")
    wf.drain()  # continued as new: round 2, parked at its pause again
    assert wf.get_status("looping").generation == 1
    ran.clear()
    before = rows()
    assert check() == (0, ["Replayed 1 instance(s): all match this code."])

    def at_the_frontier(ctx, input):
        ctx.step("batch", effect("batch"))
        ctx.continue_as_new({"round": input["round"] + 1})  # before the journaled pause

    deploy("batches", at_the_frontier)
    status, lines = check()
    assert (status, named(lines)) == (1, ["looping"])
    assert '"pause" was journaled by an earlier run but not reached' in lines[0]
    assert rows() == before
    assert not ran
