"""A local start() or signal() wakes this process's worker at once, whatever its poll interval."""

from __future__ import annotations

import time

import pytest

import django_workflows as wf
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_local_start_and_signal_wake_a_worker_polling_every_minute(define):
    @define("woken")
    def woken(ctx, input):
        return ctx.wait_for_signal("nudge", "nudge", key=input)

    with worker_thread(poll_interval="60s"):
        time.sleep(0.5)  # the worker is asleep in its first poll interval
        wf.start("woken", "k", id="woken")
        assert wait_until(lambda: wf.get_status("woken").status == "suspended", 5)
        wf.signal("nudge", {"ok": True}, key="k")
        assert wait_until(lambda: wf.get_status("woken").status == "completed", 5)
    assert wf.get_status("woken").output == {"ok": True}
