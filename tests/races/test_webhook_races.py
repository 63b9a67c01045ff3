"""Concurrent POSTs of one webhook, each a real request through Django's test client on a
thread and connection of its own: one is delivered (202), every other is 404, one signal stored."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows.models import Signal
from django_workflows.store.signals import WEBHOOK_SIGNAL
from tests.webhooks.conftest import post

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hooked(define):
    urls: dict[str, str] = {}

    @define("race-checkout")
    def checkout(ctx, order_id):
        hook = ctx.webhook("paid")
        ctx.step("hand-out", lambda step: urls.setdefault(order_id, hook.url))
        return hook.wait()

    return urls


def test_concurrent_posts_of_one_webhook_deliver_once(hooked):
    wf.start("race-checkout", "o1", id="o1")
    wf.drain()
    url = hooked["o1"]
    senders = threads_for(8, sqlite=3)
    results = race([lambda n=n: post(url, {"n": n}).status_code for n in range(senders)])
    assert sorted(results) == [202] + [404] * (senders - 1), results
    assert Signal.objects.filter(name=WEBHOOK_SIGNAL).count() == 1
    wf.drain()
    status = wf.get_status("o1")
    assert status.status == "completed", status.error
    assert status.output["n"] in range(senders)


def test_concurrent_posts_of_two_instances_webhooks_each_deliver(hooked):
    for id in ("a", "b"):
        wf.start("race-checkout", id, id=id)
    wf.drain()
    results = race([lambda id=id: post(hooked[id], {"for": id}).status_code for id in "abab"])
    assert sorted(results) == [202, 202, 404, 404], results
    wf.drain()
    assert wf.get_status("a").output == {"for": "a"}
    assert wf.get_status("b").output == {"for": "b"}
