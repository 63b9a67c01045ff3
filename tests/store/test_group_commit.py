"""Group commit (store/backends/groupcommit.py): the writes that threads queue while another
thread has the turn to write are made together by the next thread whose turn comes, in one
transaction; each thread returns once its write is committed, with its own write's outcome.
On SQLite, the lease holders' writes (SQLiteBackend.write) go through it."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection, connections

from django_workflows import clock
from django_workflows.models import WakeupCounter
from django_workflows.store import instances as store
from django_workflows.store.backends import backend
from django_workflows.store.backends.groupcommit import GroupCommit
from tests.store.test_lease_writes import STEP_DONE, journal, leased

pytestmark = pytest.mark.django_db(transaction=True)


@contextlib.contextmanager
def held(lock: threading.Lock) -> Iterator[None]:
    with lock:
        yield


def in_threads(
    calls: list[Callable[[], Any]], queued: Callable[[], int]
) -> tuple[list[threading.Thread], list[Any]]:
    """Start `calls` in threads of their own and return once `queued()` says they all wait
    (the caller holds the turn): the threads, and the list each fills with its result or
    error, in order."""
    outcomes: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            outcomes[index] = calls[index]()
        except Exception as error:
            outcomes[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while queued() < len(calls):
        assert time.monotonic() < deadline, "the writes never queued"
        time.sleep(0.005)
    return threads, outcomes


def counter_rows() -> set[int]:
    return set(WakeupCounter.objects.filter(shard__gte=100).values_list("shard", flat=True))


def test_writes_queued_meanwhile_are_made_by_one_thread_and_each_returns_committed():
    turn = threading.Lock()
    group = GroupCommit("default", lambda: held(turn))
    made_by: dict[int, int] = {}
    seen_after: dict[int, bool] = {}

    def write(shard: int) -> Callable[[], Any]:
        def job() -> int:
            made_by[shard] = threading.get_ident()
            WakeupCounter.objects.create(shard=shard, count=1)
            return shard

        def call() -> int:
            result = group.run(job)
            # this thread's own connection sees only what was committed
            seen_after[shard] = WakeupCounter.objects.filter(shard=shard).exists()
            return result

        return call

    with turn:  # another thread writes: the three writes queue
        threads, outcomes = in_threads(
            [write(100), write(101), write(102)], lambda: len(group._queue)
        )
    for thread in threads:
        thread.join(10)
    assert outcomes == [100, 101, 102]
    assert len(set(made_by.values())) == 1  # one thread made them all, in one transaction
    assert seen_after == {100: True, 101: True, 102: True}
    assert counter_rows() == {100, 101, 102}


def test_a_failing_write_fails_alone_and_the_others_are_committed():
    turn = threading.Lock()
    group = GroupCommit("default", lambda: held(turn))

    def write(shard: int, fails: bool = False) -> Callable[[], Any]:
        def job() -> int:
            WakeupCounter.objects.create(shard=shard, count=1)
            if fails:
                raise ValueError(f"write {shard} fails")
            return shard

        return lambda: group.run(job)

    with turn:
        threads, outcomes = in_threads(
            [write(100), write(101, fails=True), write(102)], lambda: len(group._queue)
        )
    for thread in threads:
        thread.join(10)
    assert outcomes[0] == 100 and outcomes[2] == 102
    assert isinstance(outcomes[1], ValueError) and str(outcomes[1]) == "write 101 fails"
    assert counter_rows() == {100, 102}  # the failed write's row went with it


def test_a_write_alone_is_its_own_transaction():
    group = GroupCommit("default", lambda: held(threading.Lock()))
    assert group.run(lambda: WakeupCounter.objects.create(shard=100, count=1).shard) == 100
    assert not connection.in_atomic_block

    def failing() -> None:
        WakeupCounter.objects.create(shard=101, count=1)
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        group.run(failing)
    assert counter_rows() == {100}


def test_sqlite_lease_holders_writes_meanwhile_share_a_transaction():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite: one writer at a time, the writes grouped; row locks elsewhere")
    database = backend("default")
    for index in range(3):
        leased(f"w-{index}", f"t-{index}")
    statements: dict[int, list[str]] = {}

    def write(index: int) -> Callable[[], Any]:
        def call() -> Any:
            def record(execute: Any, sql: str, *args: Any) -> Any:
                statements.setdefault(threading.get_ident(), []).append(sql)
                return execute(sql, *args)

            with connection.execute_wrapper(record):
                change = store.InstanceWrite(now=clock.now(), entries={"charge": STEP_DONE})
                return store.write("default", f"w-{index}", f"t-{index}", change)

        return call

    with database._writer:  # a claim, say, is writing
        threads, outcomes = in_threads(
            [write(0), write(1), write(2)], lambda: len(database._group._queue)
        )
    for thread in threads:
        thread.join(10)
    assert all(outcome == store.LeaseFlags(False, False, None) for outcome in outcomes)
    assert [journal(f"w-{index}") for index in range(3)] == [{"charge": STEP_DONE}] * 3
    (made,) = [sql for sql in statements.values() if sum("INSERT" in s for s in sql) == 3]
    assert made  # one thread's connection sent the three writes


def test_a_write_that_gets_no_turn_within_the_timeout_fails_and_is_never_made():
    turn = threading.Lock()

    @contextlib.contextmanager
    def within_a_timeout() -> Iterator[None]:
        if not turn.acquire(timeout=0.2):
            raise OperationalError("database is locked")
        try:
            yield
        finally:
            turn.release()

    group = GroupCommit("default", within_a_timeout)
    with turn:  # held past the timeout
        with pytest.raises(OperationalError, match="locked"):
            group.run(lambda: WakeupCounter.objects.create(shard=100, count=1))
        assert group._queue == []
    assert group.run(lambda: WakeupCounter.objects.create(shard=101, count=1).shard) == 101
    assert counter_rows() == {101}
