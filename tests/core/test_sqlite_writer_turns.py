"""SQLite: the store's transactions of one process take turns to write, queued on a lock of the
process instead of sleeping in SQLite's busy handler; real threads, each with its connection."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, connections, transaction

from django_workflows.models import StoreLock
from django_workflows.store.backends import backend

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's one writer at a time"),
]


def in_thread(fn):
    """Run fn in a thread of its own (its own connection, closed at the end)."""
    errors: list[BaseException] = []

    def run():
        try:
            fn()
        except BaseException as error:  # reported to the test
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def test_a_second_thread_writes_only_once_the_first_has_committed():
    order: list[str] = []
    first_in, release = threading.Event(), threading.Event()

    def first():
        with backend("default").write_transaction():
            StoreLock.objects.create(name="first")
            order.append("first in")
            first_in.set()
            release.wait(10)
            order.append("first out")

    def second():
        first_in.wait(10)
        with backend("default").write_transaction():
            order.append("second in")
            assert StoreLock.objects.filter(name="first").exists()  # committed before

    one, errors_one = in_thread(first)
    two, errors_two = in_thread(second)
    first_in.wait(10)
    two.join(0.3)
    assert two.is_alive()  # queued behind the first
    release.set()
    one.join(10)
    two.join(10)
    assert errors_one == errors_two == []
    assert order == ["first in", "first out", "second in"]


def test_no_turn_within_the_busy_timeout_fails_with_database_is_locked(monkeypatch):
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.2)
    holding, release = threading.Event(), threading.Event()

    def hold():
        with backend("default").write_transaction():
            holding.set()
            release.wait(10)

    holder, errors = in_thread(hold)
    holding.wait(10)
    try:
        with pytest.raises(OperationalError, match="database is locked.*busy timeout"):
            with backend("default").write_transaction():
                pass
    finally:
        release.set()
        holder.join(10)
    assert errors == []
    with backend("default").write_transaction():  # the turn is free again
        StoreLock.objects.create(name="after")


def test_a_store_transaction_inside_an_open_one_waits_for_no_turn(monkeypatch):
    # Taking the turn again would wait for itself, and fail after this timeout.
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.2)
    with transaction.atomic():
        with backend("default").write_transaction():
            StoreLock.objects.create(name="outer")
            with backend("default").write_transaction():  # a savepoint of the same
                StoreLock.objects.create(name="inner")
    assert set(StoreLock.objects.values_list("name", flat=True)) >= {"outer", "inner"}
