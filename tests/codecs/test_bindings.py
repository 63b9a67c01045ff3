"""Each encrypted payload is bound to the row and field it belongs to, and what is decrypted
together is authenticated together: a payload swapped with another row's, or an error whose
readable name was changed, fails to read."""

from __future__ import annotations

import base64

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import codecs
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import JournalEntry, Signal, WorkflowInstance
from django_workflows.store import payloads
from django_workflows.store.signals import signals_for

pytestmark = pytest.mark.django_db

KEY_A = base64.b64encode(b"A" * 32).decode()


@pytest.fixture(autouse=True)
def codec(settings):
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"2026-09": KEY_A})}


def swap_stored(model, column: str, a, b) -> None:
    """Swap two rows' stored `column` values with plain SQL, as someone with write access to
    the database could."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    postgres = connection.vendor == "postgresql"
    read = f"{quote(column)}::text" if postgres else quote(column)
    write = "CAST(%s AS jsonb)" if postgres else "%s"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, {read} FROM {table} WHERE id IN (%s, %s)", [a, b])
        stored = {id: value for id, value in cursor.fetchall()}
        for row, other in ((a, b), (b, a)):
            cursor.execute(
                f"UPDATE {table} SET {quote(column)} = {write} WHERE id = %s", [stored[other], row]
            )


def test_two_signal_rows_with_swapped_payloads_fail_to_read_naming_the_row():
    small = wf.signal("deposit", {"amount": 1}, key="acct").signal_id
    large = wf.signal("deposit", {"amount": 1000}, key="acct").signal_id
    swap_stored(Signal, "payload", small, large)

    with pytest.raises(wf.WorkflowPayloadError, match=rf'\["signal",{small},') as error:
        signals_for("default", name="deposit", key="acct", after_id=0, up_to_id=large)
    assert "changed, or moved" in str(error.value)


def test_a_waiter_never_reads_a_swapped_signal_payload_and_reads_it_once_put_back(
    workflow_clock,
):
    wf.start("wait-once", {"signal": "deposit", "key": "acct"}, id="depositor")
    wf.drain()
    small = wf.signal("deposit", {"amount": 1}, key="acct").signal_id
    large = wf.signal("deposit", {"amount": 1000}, key="acct").signal_id
    swap_stored(Signal, "payload", small, large)
    wf.drain()
    status = wf.get_status("depositor")
    assert (status.status, status.output) == ("suspended", None)

    swap_stored(Signal, "payload", small, large)
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.get_status("depositor").output == {"amount": 1}


def test_a_signal_payload_is_bound_to_its_name_key_and_dedupe_id():
    sent = wf.signal("deposit", {"amount": 1}, key="acct", id="d-1").signal_id
    stored = Signal.objects.get(pk=sent).payload
    for changes in ({"name": "refund"}, {"key": "other"}, {"dedupe_id": "d-2"}):
        row = Signal.objects.get(pk=sent)
        for field, value in changes.items():
            setattr(row, field, value)
        with pytest.raises(wf.WorkflowPayloadError, match="changed, or moved"):
            payloads.decode_signal(row)
    assert Signal.objects.get(pk=sent).payload == stored
    assert payloads.decode_signal(Signal.objects.get(pk=sent)).payload == {"amount": 1}


def test_an_errors_readable_name_is_authenticated_with_the_rest_of_it(workflow_clock, world):
    world.failures["charge"] = 99
    wf.start("flaky", {"retry": {"attempts": 1}}, id="declined")
    wf.drain()
    stored = WorkflowInstance.objects.get(pk="declined").error
    assert stored["name"] == "StepFailedError" and codecs.is_encoded(stored["data"])
    renamed = {**stored, "name": "WorkflowCancelledError"}
    WorkflowInstance.objects.filter(pk="declined").update(error=renamed)
    with pytest.raises(wf.WorkflowPayloadError, match="error's name"):
        wf.get_status("declined")


def test_an_error_encrypted_before_names_were_authenticated_still_reads(workflow_clock):
    """Errors stored by earlier versions hold all but the name in their ciphertext."""
    wf.start("wait-once", {"key": "k"}, id="old-error")
    at = payloads.instance_at("old-error", "error")
    old = {"name": "StepFailedError", "data": codecs.encode({"message": "declined"}, at)}
    WorkflowInstance.objects.filter(pk="old-error").update(error=old)
    assert wf.get_status("old-error").error == {"name": "StepFailedError", "message": "declined"}


@pytest.mark.parametrize("into", ["output", "custom_status", "cancel_reason"])
def test_a_payload_moved_to_another_field_of_its_instance_fails_to_read(workflow_clock, into):
    wf.start("wait-once", {"key": "k"}, id="moved")
    stored = WorkflowInstance.objects.get(pk="moved").input
    WorkflowInstance.objects.filter(pk="moved").update(**{into: stored})
    with pytest.raises(wf.WorkflowPayloadError, match=f'"moved","{into}"'):
        wf.get_status("moved")


def test_two_journal_entries_with_swapped_results_fail_to_read(workflow_clock, world):
    from tests.core.helpers import order

    wf.start("order-fulfilment", order(id="o-1"), id="swapped")
    wf.drain()
    entries = dict(
        JournalEntry.objects.filter(
            instance_id="swapped", name__in=["charge-payment", "reserve-stock"]
        ).values_list("name", "id")
    )
    swap_stored(JournalEntry, "document", entries["charge-payment"], entries["reserve-stock"])
    with pytest.raises(wf.WorkflowPayloadError, match='"swapped","(charge-payment|reserve-stock)"'):
        wf.get_status("swapped", journal=True)
