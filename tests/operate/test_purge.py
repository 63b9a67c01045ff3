"""purge(): the reference's "Purge finished instances" and the store contract's `purge`."""

from __future__ import annotations

import io
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection, connections, transaction

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import (
    InstanceAttribute,
    InstanceTag,
    JournalEntry,
    Signal,
    Wait,
    WorkflowInstance,
)
from django_workflows.results import PurgeResult
from django_workflows.store import maintenance
from django_workflows.store.backends import base as generic_backend
from django_workflows.store.backends.mysql import deletes as mysql_deletes

pytestmark = pytest.mark.django_db


def completed(id: str) -> None:
    wf.start("ops-two-steps", {}, id=id)
    wf.drain()
    assert wf.get_status(id).status == "completed"


def exists(id: str) -> bool:
    return WorkflowInstance.objects.filter(pk=id).exists()


def test_purge_deletes_finished_instances_older_than_the_cutoff_with_their_journals(
    workflow_clock, world
):
    completed("old")
    workflow_clock.advance("31d")
    completed("recent")
    result = wf.purge(older_than="30d")
    assert result.instances == 1
    assert not exists("old") and not JournalEntry.objects.filter(instance_id="old").exists()
    assert exists("recent")


def test_purge_goes_by_updated_at_not_created_at(workflow_clock, world):
    wf.start("wait-once", {"key": "k"}, id="late")  # created 40 days ago, ended 10 days ago
    wf.drain()
    workflow_clock.advance("30d")
    wf.signal("ping", {}, key="k")
    wf.drain()
    assert wf.get_status("late").status == "completed"
    workflow_clock.advance("10d")
    assert wf.purge(older_than="20d").instances == 0
    assert exists("late")
    assert wf.purge(older_than="5d").instances == 1
    assert not exists("late")


def test_purge_deletes_completed_failed_and_cancelled_by_default(workflow_clock, world):
    completed("c")
    world.failures["charge"] = 1
    wf.start("ops-two-steps", {}, id="f")
    wf.start("wait-once", {"key": "k"}, id="x")
    wf.drain()
    wf.cancel("x")
    wf.drain()
    assert [wf.get_status(i).status for i in "cfx"] == ["completed", "failed", "cancelled"]
    workflow_clock.advance("31d")
    assert wf.purge(older_than="30d").instances == 3
    assert not any(exists(i) for i in "cfx")


def test_purge_keeps_compensation_failed_unless_listed(workflow_clock, world):
    world.failures["refund"] = 1000
    wf.start("ops-undo", {"fail": True}, id="cf")
    wf.drain()
    assert wf.get_status("cf").status == "compensation_failed"
    workflow_clock.advance("31d")
    assert wf.purge(older_than="30d").instances == 0
    assert exists("cf")
    assert wf.purge(older_than="30d", status=["compensation_failed"]).instances == 1
    assert not exists("cf")


def test_purge_deletes_only_the_listed_statuses(workflow_clock, world):
    completed("c")
    world.failures["charge"] = 1
    wf.start("ops-two-steps", {}, id="f")
    wf.drain()
    workflow_clock.advance("31d")
    assert wf.purge(older_than="30d", status="failed").instances == 1
    assert exists("c") and not exists("f")


def test_purge_leaves_unfinished_instances_however_old(workflow_clock, world):
    wf.start("wait-once", {"key": "k"}, id="suspended")
    wf.drain()
    wf.start("wait-once", {"key": "k"}, id="pending")
    workflow_clock.advance("100d")
    result = wf.purge(
        older_than="30d", status=["completed", "failed", "cancelled", "compensation_failed"]
    )
    assert result.instances == 0
    assert exists("suspended") and exists("pending")


def test_purge_deletes_in_batches_until_none_is_left(workflow_clock, world):
    for i in range(5):
        completed(f"old-{i}")
    workflow_clock.advance("31d")
    completed("recent")
    result = wf.purge(older_than="30d", batch_size=2)
    assert result.instances == 5
    assert WorkflowInstance.objects.filter(pk__startswith="old-").count() == 0
    assert exists("recent")
    assert wf.purge(older_than="30d", batch_size=2).instances == 0


def test_a_purge_batch_takes_the_oldest_finished_instances_whatever_their_status(
    workflow_clock, world
):
    world.failures["charge"] = 1
    wf.start("ops-two-steps", {}, id="failed-first")
    wf.drain()
    workflow_clock.advance("1d")
    completed("completed-second")
    workflow_clock.advance("1d")
    wf.start("wait-once", {"key": "k"}, id="cancelled-third")
    wf.drain()
    wf.cancel("cancelled-third")
    wf.drain()
    workflow_clock.advance("1d")
    completed("completed-fourth")
    assert wf.get_status("failed-first").status == "failed"
    assert wf.get_status("cancelled-third").status == "cancelled"
    workflow_clock.advance("31d")
    batch = maintenance.purge(
        "default",
        statuses=["completed", "failed", "cancelled"],
        before=clock.now(),
        limit=2,
    )
    assert batch.instances == 2
    assert not exists("failed-first") and not exists("completed-second")
    assert exists("cancelled-third") and exists("completed-fourth")


def test_a_purge_batch_deletes_every_instance_and_journal_however_many_ids(
    workflow_clock, world, monkeypatch
):
    monkeypatch.setattr(generic_backend, "DELETE_CHUNK", 2)  # five ids: three rounds of deletes
    for i in range(5):
        completed(f"old-{i}")
    workflow_clock.advance("31d")
    assert wf.purge(older_than="30d", batch_size=10).instances == 5
    assert not WorkflowInstance.objects.filter(pk__startswith="old-").exists()
    assert not JournalEntry.objects.filter(instance_id__in=[f"old-{i}" for i in range(5)]).exists()


def test_purge_deletes_signals_no_unfinished_instance_can_take_but_keeps_the_newest(
    workflow_clock, world
):
    first = wf.signal("ops-purge-a", {"n": 1}).signal_id
    second = wf.signal("ops-purge-a", {"n": 2}).signal_id
    third = wf.signal("ops-purge-a", {"n": 3}).signal_id
    workflow_clock.advance("31d")
    result = wf.purge(older_than="30d")
    assert result.signals >= 2
    remaining = set(
        Signal.objects.filter(id__in=[first, second, third]).values_list("id", flat=True)
    )
    assert remaining == {third}  # the newest stays
    assert Signal.objects.order_by("-id").first().id == third


def test_purge_keeps_signals_an_unfinished_instance_started_before(workflow_clock, world):
    old = [wf.signal("ops-purge-b", {"n": n}).signal_id for n in range(2)]
    wf.start("wait-once", {"signal": "ops-purge-never", "key": "k"}, id="waiting")
    wf.drain()
    later = [wf.signal("ops-purge-b", {"n": n}).signal_id for n in range(2, 5)]
    workflow_clock.advance("31d")
    result = wf.purge(older_than="30d")
    kept = set(Signal.objects.filter(id__in=old + later).values_list("id", flat=True))
    assert kept == set(later)  # the waiting instance could still take these
    assert result.signals >= 2
    # Once that instance ends, they can go too, except the newest.
    wf.delete("waiting", force=True)
    wf.purge(older_than="30d")
    assert set(Signal.objects.filter(id__in=old + later).values_list("id", flat=True)) == {
        later[-1]
    }


def test_purge_keeps_signals_younger_than_the_cutoff(workflow_clock, world):
    old = wf.signal("ops-purge-c", {}).signal_id
    workflow_clock.advance("31d")
    recent = [wf.signal("ops-purge-c", {}).signal_id for _ in range(3)]
    wf.purge(older_than="30d")
    assert set(Signal.objects.filter(id__in=[old, *recent]).values_list("id", flat=True)) == set(
        recent
    )


def test_purge_returns_the_counts_of_instances_signals_and_rate_limit_windows(
    workflow_clock, world
):
    for i in range(3):
        completed(f"old-{i}")
    Signal.objects.all().delete()
    for _ in range(4):
        wf.signal("ops-purge-d", {})
    workflow_clock.advance("31d")
    result = wf.purge(older_than="30d", batch_size=2)
    assert isinstance(result, PurgeResult)
    assert (result.instances, result.signals, result.rate_limits) == (3, 3, 0)


@pytest.mark.parametrize("status", ["running", "pending", "suspended", "compensating", "bogus"])
def test_purge_refuses_a_status_that_is_not_finished(status):
    with pytest.raises(ValueError):
        wf.purge(older_than="30d", status=status)


def test_purge_refuses_an_empty_status_list():
    with pytest.raises(ValueError):
        wf.purge(older_than="30d", status=[])


@pytest.mark.parametrize("older_than", ["soon", "-1d", None, -5])
def test_purge_refuses_a_bad_older_than(older_than):
    with pytest.raises(ValueError):
        wf.purge(older_than=older_than)


@pytest.mark.parametrize("batch_size", [0, -1])
def test_purge_refuses_a_bad_batch_size(batch_size):
    with pytest.raises(ValueError):
        wf.purge(older_than="30d", batch_size=batch_size)


def test_purgeworkflows_command_prints_the_counts(workflow_clock, world):
    completed("old")
    Signal.objects.all().delete()
    wf.signal("ops-purge-e", {})
    wf.signal("ops-purge-e", {})
    workflow_clock.advance("31d")
    completed("recent")
    out = io.StringIO()
    call_command("purgeworkflows", "--older-than", "30d", stdout=out)
    assert out.getvalue().strip() == (
        "Purged 1 instance(s), 1 signal(s), 0 rate-limit window(s) and 0 gone worker(s)."
    )
    assert not exists("old") and exists("recent")


def test_purgeworkflows_command_takes_statuses(workflow_clock, world):
    world.failures["refund"] = 1000
    wf.start("ops-undo", {"fail": True}, id="cf")
    wf.drain()
    workflow_clock.advance("31d")
    out = io.StringIO()
    call_command(
        "purgeworkflows", "--older-than", "30d", "--status", "compensation_failed", stdout=out
    )
    assert "Purged 1 instance(s)" in out.getvalue()
    assert not exists("cf")


def test_purgeworkflows_command_refuses_a_bad_older_than():
    with pytest.raises(CommandError):
        call_command("purgeworkflows", "--older-than", "soon", stdout=io.StringIO())


@pytest.mark.parametrize("listed_ids", [1, 1000])  # MySQL/MariaDB: by an id table, by lists
def test_a_purge_batch_deletes_the_waits_tags_and_attributes_of_its_instances_only(
    workflow_clock, world, monkeypatch, listed_ids
):
    monkeypatch.setattr(mysql_deletes, "LISTED_IDS", listed_ids)
    for id in ("old-a", "old-b", "kept"):
        wf.start("ops-two-steps", {}, id=id, tags=["t"], attributes={"n": 1})
        if id == "old-b":
            wf.drain()
            workflow_clock.advance("31d")
    wf.drain()
    # A wait left on a finished instance goes with it too (the contract: "with their journals
    # and waits").
    Wait.objects.create(instance_id="old-a", signal="s", key="old-a")
    Wait.objects.create(instance_id="kept", signal="s", key="kept")
    assert wf.purge(older_than="30d").instances == 2
    for model in (JournalEntry, Wait, InstanceTag, InstanceAttribute):
        assert not model.objects.filter(instance_id__in=["old-a", "old-b"]).exists(), model
        assert model.objects.filter(instance_id="kept").exists(), model
    assert exists("kept")


@pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL's and MariaDB's id table")
def test_a_purge_batch_deletes_the_same_where_its_temporary_id_table_cannot_be_made(
    workflow_clock, world, monkeypatch
):
    monkeypatch.setattr(mysql_deletes, "LISTED_IDS", 1)  # the table for more than one id
    for i in range(3):
        completed(f"old-{i}")
    workflow_clock.advance("31d")
    completed("recent")
    with connection.cursor() as cursor:  # the name taken: its CREATE fails
        cursor.execute(f"CREATE TEMPORARY TABLE {mysql_deletes.DOOMED} (x int)")
    try:
        assert wf.purge(older_than="30d").instances == 3
        with connection.cursor() as cursor:  # the table that was there is left alone
            cursor.execute(f"SELECT COUNT(*) FROM {mysql_deletes.DOOMED}")
            assert cursor.fetchone()[0] == 0
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TEMPORARY TABLE {mysql_deletes.DOOMED}")
    assert not WorkflowInstance.objects.filter(pk__startswith="old-").exists()
    assert not JournalEntry.objects.filter(instance_id__in=["old-0", "old-1", "old-2"]).exists()
    assert exists("recent")


@pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL's and MariaDB's id table")
def test_the_temporary_id_table_is_gone_after_a_purge_batch(workflow_clock, world, monkeypatch):
    monkeypatch.setattr(mysql_deletes, "LISTED_IDS", 1)
    completed("old-0")
    completed("old-1")
    workflow_clock.advance("31d")
    assert wf.purge(older_than="30d").instances == 2
    with connection.cursor() as cursor:  # a second batch on this connection makes it again
        cursor.execute(f"CREATE TEMPORARY TABLE {mysql_deletes.DOOMED} (x int)")
        cursor.execute(f"DROP TEMPORARY TABLE {mysql_deletes.DOOMED}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "mysql", reason="InnoDB's lock wait timeout")
@pytest.mark.parametrize("listed_ids", [1, 1000])
def test_a_purge_batch_that_fails_midway_deletes_nothing(
    workflow_clock, world, monkeypatch, listed_ids
):
    monkeypatch.setattr(mysql_deletes, "LISTED_IDS", listed_ids)
    for i in range(2):
        wf.start("ops-two-steps", {}, id=f"old-{i}", tags=["t"])
    wf.drain()
    workflow_clock.advance("31d")
    journal = JournalEntry.objects.filter(instance_id__in=["old-0", "old-1"])
    entries = journal.count()
    locked, release = threading.Event(), threading.Event()

    def hold_a_tag_row() -> None:  # on a connection of its own
        try:
            with transaction.atomic():
                list(InstanceTag.objects.select_for_update().filter(instance_id="old-1"))
                locked.set()
                release.wait(30)
        finally:
            connections["default"].close()

    holder = threading.Thread(target=hold_a_tag_row)
    holder.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
        with pytest.raises(OperationalError):  # the journal gone, the tags' DELETE gives up
            wf.purge(older_than="30d")
    finally:
        release.set()
        holder.join()
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT")
    assert exists("old-0") and exists("old-1")
    assert journal.count() == entries and entries > 0
    assert InstanceTag.objects.filter(instance_id__in=["old-0", "old-1"]).count() == 2
    assert wf.purge(older_than="30d").instances == 2
    assert not journal.exists()
