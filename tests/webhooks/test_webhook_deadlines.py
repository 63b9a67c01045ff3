"""A webhook's POST is acknowledged only if its wait will take it: after the wait's deadline, and
to an instance that will run no further wait, the view answers 404 and stores nothing.

The hole these close: the deadline passed before any worker ran the instance (a deploy, a
backlog), the POST got 202, and the engine then took the timer and gave the workflow None.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connections

import django_workflows as wf
from django_workflows.models import Signal, WorkflowInstance

from .conftest import post, started

pytestmark = pytest.mark.django_db


def test_a_post_after_the_deadline_before_any_worker_ran_is_404(checkout, provider, workflow_clock):
    started(timeout="1h")
    workflow_clock.advance("2h")  # no worker ran the instance meanwhile
    assert post(provider.callbacks["o1"], {"late": True}).status_code == 404
    assert not Signal.objects.exists()
    wf.drain()
    assert wf.get_status("o1").output["body"] is None  # the timer, as the 404 said


def test_a_post_at_the_deadline_is_404(checkout, provider, workflow_clock):
    started(timeout="1h")
    workflow_clock.advance("1h")
    assert post(provider.callbacks["o1"], {"late": True}).status_code == 404
    assert not Signal.objects.exists()


def test_a_post_just_before_the_deadline_wins_however_late_the_worker(
    checkout, provider, workflow_clock
):
    started(timeout="1h")
    workflow_clock.advance("59m")
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 202
    workflow_clock.advance("5h")  # the worker comes long after the deadline
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"n": 1}


def test_a_post_to_an_instance_asked_to_cancel_is_404(checkout, provider, workflow_clock):
    started()
    wf.cancel("o1")  # requested; no worker has run the cancel yet
    assert wf.get_status("o1").status == "suspended"
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 404
    assert not Signal.objects.exists()


def test_a_post_to_an_instance_asked_to_terminate_is_404(checkout, provider, workflow_clock):
    started()
    wf.terminate("o1")
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 404
    assert not Signal.objects.exists()


@pytest.fixture
def racing_checkout(define, provider, workflow_clock):
    """The checkout, with hooks that run in an execution before its wait is decided: after the
    claim read the newest signal id, so what a hook delivers is newer than the claim."""
    hooks: list = []

    @define("racing-checkout")
    def checkout(ctx, order):
        hook = ctx.webhook("paid")
        ctx.step("create-payment", lambda step: provider.create_payment(order["id"], hook.url))
        while hooks:
            hooks.pop()()
        return {"body": hook.wait(timeout="1h")}

    return hooks


@pytest.mark.django_db(transaction=True)
def test_a_post_recorded_before_the_deadline_wins_though_the_claim_came_before_it(
    racing_checkout, provider, workflow_clock
):
    wf.start("racing-checkout", {"id": "o1"}, id="o1")
    wf.drain()
    workflow_clock.advance("59m")
    answers: list[int] = []

    def post_then_pass_the_deadline() -> None:
        def deliver() -> None:
            try:
                answers.append(post(provider.callbacks["o1"], {"n": 1}).status_code)
            finally:
                connections.close_all()

        thread = threading.Thread(target=deliver)  # its own connection, committed at once
        thread.start()
        thread.join()
        workflow_clock.advance("2m")  # the deadline passes while this execution runs

    racing_checkout.append(post_then_pass_the_deadline)
    # Due a minute before its deadline, as after a lapsed lease or a wake-up for another wait.
    WorkflowInstance.objects.filter(pk="o1").update(wake_at=workflow_clock.now())
    wf.drain()
    assert answers == [202]
    status = wf.get_status("o1")
    assert status.status == "completed", status.error
    assert status.output["body"] == {"n": 1}
