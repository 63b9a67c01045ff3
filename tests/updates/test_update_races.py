"""Races with real threads, each on its own connection: many concurrent update() calls to one
waiting instance, while workers run it, deliver one per wait and keep the rest in order."""

from __future__ import annotations

import logging
import threading

import pytest

import django_workflows as wf
from django_workflows.models import Signal
from django_workflows.store import payloads
from tests.races.conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_updates_are_delivered_one_per_wait_and_the_rest_kept_in_order(define, caplog):
    # The store logs every deadlock it runs again at DEBUG: a signal's wake-up and a claim of
    # the same instance must lock it in the same order, and so never deadlock.
    caplog.set_level(logging.DEBUG, logger="django_workflows")
    count = threads_for(server=50, sqlite=8)
    waits = count - 3  # three stay stored for waits that never come

    @define("takes-updates")
    def takes(ctx, input):
        taken = [ctx.wait_for_update("add") for _ in range(input)]
        # Not ended before every update is sent: an update sent once it ended is refused.
        ctx.wait_for_signal("all-sent", "all-sent", key=ctx.instance_id)
        return taken

    wf.start(takes, waits, id="busy")
    wf.drain()
    assert wf.get_status("busy").status == "suspended"
    sent = threading.Event()

    def drain_loop() -> int:
        executed = 0
        while True:
            done = sent.is_set()  # read before the drain: one more round after the last update
            executed += wf.drain()
            if done:
                return executed

    failed: list[BaseException] = []

    def drain_thread() -> None:
        try:
            race([drain_loop])
        except BaseException as error:  # reported below: a drainer that died fails the test
            failed.append(error)

    drainer = threading.Thread(target=drain_thread, daemon=True)
    drainer.start()
    try:
        results = race([lambda n=n: wf.update("busy", "add", n) for n in range(count)])
    finally:
        wf.signal("all-sent", None, key="busy")
        sent.set()
        drainer.join(120)
    assert not drainer.is_alive()
    assert not failed, f"drain() raised in the drainer thread: {failed[0]!r}"
    deadlocks = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Deadlock")]
    assert not deadlocks, deadlocks
    assert all(result.accepted for result in results), [r.reason for r in results if not r.accepted]
    for _ in range(10):  # the last update may have woken it after the drainer's last round
        if not wf.drain():
            break
    status = wf.get_status("busy")
    assert status.status == "completed", status.error
    stored = {
        payloads.decode_signal(signal).payload: signal.id
        for signal in Signal.objects.filter(name="$update:add")
    }
    assert sorted(stored) == list(range(count))  # every update stored once
    # Each wait took the oldest update it had not taken: the first `waits` in the stored order.
    in_order = sorted(stored, key=stored.__getitem__)
    assert status.output == in_order[:waits]
