"""Bad values and arguments, one table: each is refused with a ValueError or TypeError naming
the argument, before anything is written, on every database.

Each of these used to reach the database (or datetime arithmetic) and fail there with an error
that named nothing: UnicodeEncodeError, DataError, MariaDB's CONSTRAINT 4025, RecursionError,
OverflowError, ZeroDivisionError, or a raw database error; some were accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.jsonvalues import MAX_DEPTH
from django_workflows.models import (
    JournalEntry,
    Signal,
    WorkflowInstance,
    WorkflowSchedule,
)
from django_workflows.store.jsonvalues import PACKET_MARGIN

pytestmark = pytest.mark.django_db

SURROGATE = "\ud800"  # a lone surrogate: a Python str, but no UTF-8 form


def nested(depth: int, leaf: Any = 1) -> Any:
    """`leaf` inside `depth` lists."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def upsert(**options: Any) -> Any:
    return wf.schedules.upsert("bad", **{"workflow": "values", "every": "1h", **options})


CASES: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    # Values stored as JSON.
    (
        "input-surrogate",
        lambda: wf.start("values", {"n": SURROGATE}, id="bad"),
        ValueError,
        "input",
    ),
    (
        "input-surrogate-key",
        lambda: wf.start("values", {SURROGATE: 1}, id="bad"),
        ValueError,
        "input",
    ),
    ("input-deep", lambda: wf.start("values", nested(100_000), id="bad"), ValueError, "input"),
    (
        "input-too-deep",
        lambda: wf.start("values", nested(MAX_DEPTH + 1), id="bad"),
        ValueError,
        "input",
    ),
    ("payload-surrogate", lambda: wf.signal("ping", [SURROGATE]), ValueError, "payload"),
    ("payload-deep", lambda: wf.signal("ping", nested(100_000)), ValueError, "payload"),
    ("schedule-input-surrogate", lambda: upsert(input={"n": SURROGATE}), ValueError, "input"),
    ("schedule-input-deep", lambda: upsert(input=nested(100_000)), ValueError, "input"),
    (
        "declared-schedule-input-surrogate",
        lambda: wf.Schedule("bad", every="1h", input={"n": SURROGATE}),
        ValueError,
        "input of schedule",
    ),
    # Ids, names, keys and reasons stored as text.
    (
        "id-surrogate",
        lambda: wf.start("values", None, id=f"a{SURROGATE}"),
        ValueError,
        "instance id",
    ),
    ("signal-name-surrogate", lambda: wf.signal(f"p{SURROGATE}"), ValueError, "signal name"),
    ("signal-key-surrogate", lambda: wf.signal("ping", key=SURROGATE), ValueError, "signal key"),
    ("signal-id-surrogate", lambda: wf.signal("ping", id=SURROGATE), ValueError, "signal id"),
    ("cancel-reason-surrogate", lambda: wf.cancel("existing", SURROGATE), ValueError, "reason"),
    ("cancel-reason-nul", lambda: wf.cancel("existing", "a\x00b"), ValueError, "reason"),
    ("cancel-reason-too-long", lambda: wf.cancel("existing", "r" * 65_537), ValueError, "reason"),
    (
        "terminate-reason-surrogate",
        lambda: wf.terminate("existing", SURROGATE),
        ValueError,
        "reason",
    ),
    # Durations past what datetime arithmetic can hold.
    (
        "start-timeout-huge",
        lambda: wf.start("values", None, id="bad", timeout=10**20),
        ValueError,
        "timeout",
    ),
    (
        "start-timeout-weeks",
        lambda: wf.start("values", None, id="bad", timeout="10000000000w"),
        ValueError,
        "timeout",
    ),
    (
        "start-timeout-timedelta",
        lambda: wf.start("values", None, id="bad", timeout=timedelta.max),
        ValueError,
        "timeout",
    ),
    ("retry-timeout-huge", lambda: wf.retry("failed", timeout=10**20), ValueError, "timeout"),
    ("purge-older-than-huge", lambda: wf.purge(older_than=10**20), ValueError, "older_than"),
    ("every-huge", lambda: upsert(every=10**20), ValueError, "every"),
    # Schedules' rules.
    (
        "rrule-interval-zero",
        lambda: upsert(every=None, rrule="FREQ=DAILY;INTERVAL=0"),
        ValueError,
        "INTERVAL",
    ),
    (
        "rrule-count-negative",
        lambda: upsert(every=None, rrule="FREQ=DAILY;COUNT=-1"),
        ValueError,
        "COUNT",
    ),
    # Pages.
    ("list-limit-huge", lambda: wf.list_instances(limit=10**20), ValueError, "limit"),
    ("list-offset-huge", lambda: wf.list_instances(offset=10**20), ValueError, "offset"),
    ("list-limit-bool", lambda: wf.list_instances(limit=True), ValueError, "limit"),
]


def everything() -> tuple[Any, ...]:
    """What is stored: every row that a refused call could have added or changed."""
    return (
        list(WorkflowInstance.objects.order_by("id").values()),
        list(Signal.objects.values()),
        list(WorkflowSchedule.objects.values()),
        list(JournalEntry.objects.values()),
    )


@pytest.fixture
def stored(workflow_clock):
    """An unfinished instance ("existing") and a failed one ("failed"), and what is stored."""
    wf.start("values", None, id="existing")
    wf.start("values", None, id="failed")
    WorkflowInstance.objects.filter(id="failed").update(
        status="failed", wake_at=None, error={"name": "ValueError", "message": "x"}
    )
    return everything()


@pytest.mark.parametrize(
    ("call", "error", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_value_is_refused_naming_it_before_anything_is_written(stored, call, error, names):
    with pytest.raises(error) as raised:
        call()
    assert names in str(raised.value)
    assert everything() == stored


def test_a_value_nested_as_deep_as_allowed_is_stored_and_read_back(workflow_clock):
    value = {"deep": nested(MAX_DEPTH - 1, "leaf")}
    wf.start("values", value, id="deep")
    assert wf.get_status("deep").input == value


def test_the_error_says_where_in_the_value_the_surrogate_is(workflow_clock):
    with pytest.raises(ValueError, match=r"value\['items'\]\[1\]\['name'\]"):
        wf.start("values", {"items": [{"name": "a"}, {"name": f"b{SURROGATE}"}]}, id="bad")


def test_a_nul_character_in_a_cancel_reason_is_refused_on_every_database(workflow_clock):
    """It is text, like an id: PostgreSQL cannot store it, so no database does."""
    wf.start("values", None, id="existing")
    with pytest.raises(ValueError, match="reason contains a NUL"):
        wf.cancel("existing", "a\x00b")
    assert not wf.get_status("existing").cancel_requested


@pytest.mark.skipif(connection.vendor != "mysql", reason="MariaDB and MySQL: max_allowed_packet")
def test_an_input_larger_than_max_allowed_packet_is_refused(workflow_clock):
    """Half a packet of "é" is a whole packet as UTF-8: more than the server takes, which
    used to drop the connection ("server has gone away")."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        packet = cursor.fetchone()[0]
    text = "é" * (packet // 2)
    with pytest.raises(ValueError, match="input .* max_allowed_packet"):
        wf.start("values", {"text": text}, id="big")
    assert not WorkflowInstance.objects.exists()
    # The connection is still fine, and the largest input the check lets through is stored.
    # '{"text": "..."}' sent as an SQL literal: 12 characters around the text, its 4 quotes
    # escaped.
    largest = "a" * (packet - PACKET_MARGIN - 16)
    wf.start("values", {"text": largest}, id="largest")
    assert wf.get_status("largest").input == {"text": largest}
    with pytest.raises(ValueError, match="max_allowed_packet"):
        wf.start("values", {"text": largest + "a"}, id="too-large")


def test_start_result_status_is_a_status_for_a_new_and_an_existing_instance(workflow_clock):
    new = wf.start("values", None, id="same")
    existing = wf.start("values", None, id="same")
    assert not existing.created
    assert type(new.status) is wf.Status and type(existing.status) is wf.Status
    assert new.status == existing.status == wf.Status.PENDING
