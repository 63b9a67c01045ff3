"""Ids the engine generates are its own: a started instance cannot take a schedule occurrence's.

An occurrence's instance id is `<schedule id>@<UTC time, ms, Z>`; an instance started with such
an id would be taken for the occurrence, which would then never start.
"""

from __future__ import annotations

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "id",
    ["nightly@2026-01-01T03:30:00.000Z", "monthly-invoices.v2@2026-10-01T06:00:00.000Z"],
)
def test_start_refuses_an_id_in_the_form_of_a_schedule_occurrences(workflow_clock, id):
    with transaction.atomic():
        with pytest.raises(ValueError, match="(?s)id.*schedule occurrence"):
            wf.start("wait-once", {"key": "A"}, id=id)
        assert WorkflowInstance.objects.count() == 0  # refused before any SQL


@pytest.mark.parametrize(
    "id",
    [
        "ann@example.com",
        "nightly@2026-01-01",
        "nightly@2026-01-01T03:30:00Z",
        "nightly@2026-01-01T03:30:00.000Z ",
        "order 7@2026-01-01T03:30:00.000Z",
    ],
)
def test_start_takes_an_id_with_an_at_sign_that_no_occurrence_has(workflow_clock, id):
    assert wf.start("wait-once", {"key": "A"}, id=id).created is True


def test_a_child_cannot_be_given_an_occurrences_id(define, workflow_clock):
    @define("occurrence-squatter")
    def squatter(ctx, input):
        return ctx.execute_child("wait-once", {"key": "A"}, id="nightly@2026-01-01T03:30:00.000Z")

    wf.start("occurrence-squatter", None, id="parent")
    wf.drain()
    status = wf.get_status("parent")
    assert status.status == "failed"
    assert "schedule occurrence" in status.error["message"]
    assert not WorkflowInstance.objects.filter(pk="nightly@2026-01-01T03:30:00.000Z").exists()
