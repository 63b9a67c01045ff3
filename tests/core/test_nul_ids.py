"""An id, name or key with a NUL character in it, passed to any public call: a ValueError
naming it, before any SQL, on every database (PostgreSQL's text refuses NUL with a DataError;
SQLite and MariaDB would look it up)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync

import django_workflows as wf

pytestmark = pytest.mark.django_db

NUL = "a\x00b"

CALLS: list[tuple[str, Callable[[], Any]]] = [
    ("start", lambda: wf.start("values", None, id=NUL)),
    ("get_status", lambda: wf.get_status(NUL)),
    ("list_instances-parent_id", lambda: wf.list_instances(parent_id=NUL)),
    ("list_instances-schedule_id", lambda: wf.list_instances(schedule_id=NUL)),
    ("list_instances-workflow", lambda: wf.list_instances(workflow=NUL)),
    ("list_instances-queue", lambda: wf.list_instances(queue=NUL)),
    ("list_instances-tag", lambda: wf.list_instances(tag=NUL)),
    ("signal-name", lambda: wf.signal(NUL)),
    ("signal-key", lambda: wf.signal("ping", key=NUL)),
    ("signal-id", lambda: wf.signal("ping", id=NUL)),
    ("cancel", lambda: wf.cancel(NUL)),
    ("terminate", lambda: wf.terminate(NUL)),
    ("result", lambda: wf.result(NUL, timeout=1)),
    ("retry", lambda: wf.retry(NUL)),
    ("delete", lambda: wf.delete(NUL)),
    ("fork", lambda: wf.fork(NUL, from_step="reserve")),
    ("fork-new_id", lambda: wf.fork("existing", from_step="reserve", new_id=NUL)),
    ("get_value", lambda: wf.get_value(NUL, "progress")),
    ("get_value-name", lambda: wf.get_value("existing", NUL)),
    ("update", lambda: wf.update(NUL, "change")),
    ("update-name", lambda: wf.update("existing", NUL)),
    ("resume", lambda: wf.resume(NUL)),
    ("resume-name", lambda: wf.resume("existing", NUL)),
    ("complete_task", lambda: wf.complete_task(NUL, "review")),
    ("fail_task", lambda: wf.fail_task(NUL, "review", "no")),
    ("schedules.get", lambda: wf.schedules.get(NUL)),
    ("schedules.remove", lambda: wf.schedules.remove(NUL)),
    ("schedules.pause", lambda: wf.schedules.pause(NUL)),
    ("schedules.resume", lambda: wf.schedules.resume(NUL)),
    ("schedules.trigger", lambda: wf.schedules.trigger(NUL)),
    ("schedules.list", lambda: wf.schedules.list(workflow=NUL)),
    ("aget_status", lambda: async_to_sync(wf.aget_status)(NUL)),
    ("acancel", lambda: async_to_sync(wf.acancel)(NUL)),
    ("aretry", lambda: async_to_sync(wf.aretry)(NUL)),
    ("adelete", lambda: async_to_sync(wf.adelete)(NUL)),
]


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[name for name, _ in CALLS])
def test_a_nul_in_an_id_name_or_key_is_a_value_error(workflow_clock, call):
    wf.start("values", None, id="existing")
    with pytest.raises(ValueError, match="contains a NUL character"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: wf.schedules.upsert(NUL, workflow="values", every="1h"),
        lambda: wf.schedules.preview(NUL),
    ],
    ids=["upsert", "preview"],
)
def test_a_schedule_id_with_a_nul_is_refused_as_any_bad_schedule_id(call):
    with pytest.raises(ValueError, match="Schedule id 'a\\\\x00b' must be letters"):
        call()
