"""Debounced starts of one id from many threads at once, each on its own connection, and a
claim racing them: one instance, with the input of the start that committed last."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reindex(define):
    @define("reindex-race")
    def flow(ctx, input):
        return input["rev"]

    return flow


def test_concurrent_debounced_starts_give_one_instance_with_the_last_committed_input(reindex):
    order: list[int] = []
    lock = threading.Lock()

    def start(rev: int):
        def run():
            with transaction.atomic():
                result = wf.start(reindex, {"rev": rev}, id="doc-race", debounce="1h")
                # The row stays locked until this transaction commits: the order in which the
                # starts get here is the order they commit in.
                with lock:
                    order.append(rev)
                time.sleep(0.01)
            return result

        return run

    results = race([start(rev) for rev in range(threads_for(20, 8))])
    assert WorkflowInstance.objects.filter(pk="doc-race").count() == 1
    assert [r.created for r in results].count(True) == 1
    assert all(r.debounced for r in results if not r.created)
    assert wf.get_status("doc-race").input == {"rev": order[-1]}


def test_a_debounced_start_racing_a_claim_either_debounces_or_finds_it_begun(reindex):
    for round in range(threads_for(10, 4)):
        id = f"doc-claim-{round}"
        wf.start(reindex, {"rev": 0}, id=id, debounce="1ms")
        time.sleep(0.01)  # due now

        def debounce(id: str = id):
            return wf.start(reindex, {"rev": 1}, id=id, debounce="1h")

        results = race([wf.drain, debounce])
        started = results[1]
        wf.drain()
        status = wf.get_status(id)
        if started.debounced:
            # Debounced before the claim: the claim passed over it, and it waits an hour more.
            assert results[0] == 0
            assert status.status == "pending" and status.input == {"rev": 1}
        else:
            # The claim came first: it ran with the first input, which the start left alone.
            assert status.status == "completed" and wf.result(id) == 0
