"""Helpers the test packages share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def worker_thread(**options: Any) -> Iterator[Any]:
    """A real `Worker(**options).run()` in a thread of its own, stopped (and its connections
    closed) when the block ends."""
    from django.db import connections

    from django_workflows.worker import Worker

    worker = Worker(**options)

    def run() -> None:
        try:
            worker.run()
        finally:
            connections.close_all()

    # A daemon: a worker that a failed test leaves running must not keep the run from ending.
    thread = threading.Thread(target=run, name="test-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(30)


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll `condition` until it holds or `timeout` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def claim_ids(names: list[str], *, limit: int, lease: str = "30s") -> list[str]:
    """One claim as a worker of this thread makes it, with the limits of the registered code
    (the highest version's): the ids it leased, each for `lease`."""
    import uuid

    from django_workflows import clock
    from django_workflows.durations import parse_duration
    from django_workflows.engine.registry import registry
    from django_workflows.store import instances as store
    from django_workflows.worker.worker import limit_rules

    concurrency, rates = limit_rules(names)
    now = clock.now()
    claimed = store.claim(
        "default",
        owner=threading.current_thread().name,
        token=uuid.uuid4().hex,
        now=now,
        lease_until=now + parse_duration(lease, "lease"),
        limit=limit,
        workflows=registry.pairs(names),
        concurrency=concurrency,
        rates=rates,
    )
    return [i.id for i in claimed.instances]


def end_leases(ids: list[str], **changes: Any) -> None:
    """The lease holders' releases of `ids`, as their writes make them (store.write): the lease
    ended with `changes`, and the parked instances of each one's concurrency key put back, in
    one transaction."""
    from django.db import transaction

    from django_workflows.models import WorkflowInstance
    from django_workflows.store.backends import backend

    with transaction.atomic():
        rows = WorkflowInstance.objects.filter(pk__in=ids)
        # The UPDATE first: on SQLite under Django 4.2 (DEFERRED transactions) a read first
        # would take a shared lock that the UPDATE cannot upgrade while another thread writes.
        rows.update(lease_token=None, lease_until=None, **changes)
        keys = set(rows.values_list("workflow", "concurrency_key"))
        for workflow, key in sorted(keys, key=str):
            if key is not None:
                backend("default").unpark_key(workflow, key)


def release_as_holder(id: str) -> None:
    """The lease holder's release of `id` by the engine's own write (store.write, the fast
    write where there is one): it locks the row, ends the lease and puts back the instances
    parked for its key, in one transaction."""
    from django_workflows import clock
    from django_workflows.models import WorkflowInstance
    from django_workflows.store import instances as store

    row = WorkflowInstance.objects.get(pk=id)
    write = store.InstanceWrite(
        now=clock.now(),
        changes={"status": "completed"},
        release=store.Release(
            wake_at=None, waits=[], signal_cursor=row.signal_cursor, had_waits=False
        ),
        unpark=store.parked_by(row),
    )
    assert store.write("default", id, row.lease_token, write) is not None, f"{id}: lease gone"


def counting_worker(claims: list[int], **options: Any) -> Any:
    """A Worker that notes in `claims` how many instances each of its loop's claims found."""
    from django_workflows.worker import Worker

    class Counting(Worker):
        def _claim(self, limit: int) -> Any:
            found = super()._claim(limit)
            claims.append(len(found[0]))
            return found

    return Counting(**options)
