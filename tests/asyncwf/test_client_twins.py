"""The client's async twins: the same results and errors as the sync calls, the database work
off the caller's event loop, and aresult() waiting without blocking it."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import django_workflows as wf
from django_workflows import WorkflowFailedError, WorkflowNotFoundError, WorkflowResultTimeoutError
from tests.asyncwf.helpers import arun
from tests.helpers import worker_thread

pytestmark = pytest.mark.django_db(transaction=True)

TWINS = [
    "astart", "asignal", "aget_status", "alist_instances", "acancel", "aterminate", "aresult",
    "aretry", "adelete", "apurge", "afork", "aget_value", "aupdate", "aresume",
    "acomplete_task", "afail_task", "astart_and_wait",
]  # fmt: skip


@pytest.fixture
def waiting(define):
    @define("twins-waiting")
    def waiting_workflow(ctx, input):
        ctx.set_value("stage", "waiting")
        payload = ctx.wait_for_signal("go", "twins-go", key=input["key"])
        if payload == "fail":
            ctx.fail("asked to fail")
        return {"got": payload}

    return waiting_workflow


@pytest.mark.parametrize("name", TWINS)
def test_every_twin_is_a_coroutine_function_with_the_sync_calls_arguments(name):
    twin = getattr(wf, name)
    assert inspect.iscoroutinefunction(twin)
    assert twin.__name__ == name
    assert inspect.signature(twin) == inspect.signature(getattr(wf, name[1:]))


def test_astart_aget_status_and_alist_instances_return_what_the_sync_calls_return(waiting):
    async def scenario():
        started = await wf.astart("twins-waiting", {"key": "k1"}, id="tw-1", tags=["vip"])
        again = await wf.astart("twins-waiting", {"key": "k1"}, id="tw-1")
        listed = await wf.alist_instances(workflow="twins-waiting", tag="vip")
        return started, again, await wf.aget_status("tw-1"), listed, await wf.aget_status("nope")

    started, again, status, listed, missing = arun(scenario())
    assert (started.id, started.created, again.created) == ("tw-1", True, False)
    assert status == wf.get_status("tw-1")
    assert [s.id for s in listed] == ["tw-1"]
    assert missing is None


def test_asignal_wakes_the_instance_and_aresult_returns_its_output(waiting):
    async def scenario():
        await wf.astart("twins-waiting", {"key": "k2"}, id="tw-2")
        with worker_thread(poll_interval=0.05):
            await asyncio.sleep(0)
            while (await wf.aget_status("tw-2")).status != "suspended":
                await asyncio.sleep(0.05)
            value = await wf.aget_value("tw-2", "stage")
            sent = await wf.asignal("twins-go", "hello", key="k2", id="sig-1")
            resent = await wf.asignal("twins-go", "hello", key="k2", id="sig-1")
            output = await wf.aresult("tw-2", timeout="20s")
        return value, sent, resent, output

    value, sent, resent, output = arun(scenario())
    assert value == "waiting"
    assert (sent.created, resent.created) == (True, False)
    assert output == {"got": "hello"}


def test_aresult_waits_without_blocking_the_loop(waiting):
    ticks = []

    async def ticker():
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def scenario():
        await wf.astart("twins-waiting", {"key": "k3"}, id="tw-3")
        tick = asyncio.create_task(ticker())
        try:
            with pytest.raises(WorkflowResultTimeoutError) as raised:
                await wf.aresult("tw-3", timeout=0.5)
        finally:
            tick.cancel()
        return raised.value

    error = arun(scenario())
    assert error.instance_id == "tw-3" and error.timeout == 0.5
    assert "0.5s" in str(error)
    assert len(ticks) >= 20  # the loop ran on while aresult() waited


def test_the_twins_raise_the_sync_calls_errors(waiting):
    async def scenario():
        errors = []
        for call in (
            wf.aresult("missing"),
            wf.acancel("missing"),
            wf.astart("no-such-workflow"),
            wf.astart("twins-waiting", {"key": object()}),
            wf.alist_instances(limit=0),
        ):
            try:
                await call
            except Exception as error:  # each a different error class, compared below
                errors.append(type(error))
        return errors

    assert arun(scenario()) == [
        WorkflowNotFoundError,
        WorkflowNotFoundError,
        WorkflowNotFoundError,
        TypeError,
        ValueError,
    ]


def test_acancel_and_aterminate_stop_the_instance_as_the_sync_calls_do(waiting):
    async def scenario():
        await wf.astart("twins-waiting", {"key": "k4"}, id="tw-4")
        await wf.astart("twins-waiting", {"key": "k5"}, id="tw-5")
        with worker_thread(poll_interval=0.05):
            cancelled = await wf.acancel("tw-4", "changed my mind")
            terminated = await wf.aterminate("tw-5")
            again = await wf.acancel("tw-4")
            ends = []
            for id in ("tw-4", "tw-5"):
                with pytest.raises(WorkflowFailedError) as raised:
                    await wf.aresult(id, timeout="20s")
                ends.append(raised.value.status)
        return cancelled, terminated, again, ends

    cancelled, terminated, again, ends = arun(scenario())
    assert (cancelled.accepted, terminated.accepted, again.accepted) == (True, True, False)
    assert ends == ["cancelled", "cancelled"]


def test_aretry_runs_a_failed_instance_again(define):
    broken = {"yes": True}

    def charge(step):
        if broken["yes"]:
            raise wf.NonRetryableStepError("card declined")
        return "charged"

    @define("twins-flaky")
    def flaky(ctx, input):
        return ctx.step("charge", charge)

    async def scenario():
        await wf.astart("twins-flaky", id="tw-7")
        with worker_thread(poll_interval=0.05):
            with pytest.raises(WorkflowFailedError) as raised:
                await wf.aresult("tw-7", timeout="20s")
            broken["yes"] = False
            retried = await wf.aretry("tw-7")
            output = await wf.aresult("tw-7", timeout="20s")
        return raised.value.status, retried, output

    failed, retried, output = arun(scenario())
    assert failed == "failed"
    assert retried.id == "tw-7"
    assert output == "charged"


def test_astart_and_wait_returns_the_output(define):
    @define("twins-quick")
    def quick(ctx, input):
        return ctx.step("double", lambda step: input * 2)

    async def scenario():
        with worker_thread(poll_interval=0.05):
            return await wf.astart_and_wait("twins-quick", 21, id="tw-6", wait_timeout="20s")

    assert arun(scenario()) == 42
