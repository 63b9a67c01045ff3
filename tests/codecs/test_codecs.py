"""Encrypt what workflows store: the docs page's "Encrypt what workflows store", rule by rule."""

from __future__ import annotations

import base64
import json
import logging

import pytest
from django.core.checks import run_checks

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import JournalEntry, Signal, WorkflowInstance
from tests.core.helpers import order

pytestmark = pytest.mark.django_db

KEY_A = base64.b64encode(b"A" * 32).decode()
KEY_B = base64.b64encode(b"B" * 32).decode()
SECRET = "4111-1111-1111-1111"  # what must never reach the database readable


def use_codec(settings, *codecs):
    settings.DJANGO_WORKFLOWS = {"CODEC": list(codecs) if len(codecs) > 1 else codecs[0]}


def aes(keys=None, current="2026-09", **options):
    return AesGcmPayloadCodec(keys=keys or {"2026-09": KEY_A}, current=current, **options)


def raw_rows(instance_id: str) -> str:
    """Everything stored about an instance, its journal and every signal, as one text."""
    rows = [
        list(WorkflowInstance.objects.filter(pk=instance_id).values())[0],
        *JournalEntry.objects.filter(instance_id=instance_id).values("name", "document"),
        *Signal.objects.values("name", "key", "payload"),
    ]
    return json.dumps(rows, default=str)


# -- the codec and its keys ----------------------------------------------------------------------


def test_a_payload_round_trips_in_the_documented_stored_form(settings):
    codec = aes()
    stored = codec.encode({"card": SECRET}, "here")
    assert stored.startswith("2026-09.")
    assert SECRET not in stored
    assert codec.decode(stored, "here") == {"card": SECRET}
    assert codec.encode({"card": SECRET}, "here") != stored  # a fresh key and nonce each time


@pytest.mark.parametrize(
    "keys, current, message",
    [
        ({"2026-09": None}, "2026-09", "'2026-09' is missing"),
        ({"2026-09": ""}, "2026-09", "'2026-09' is missing"),
        ({"2026-09": "not base64!"}, "2026-09", "'2026-09' is not base64"),
        ({"2026-09": base64.b64encode(b"short").decode()}, "2026-09", "is 5 bytes, not 32"),
        ({"2026-09": KEY_A}, "2027-03", "current key '2027-03' is not one of its keys"),
        ({"2026-09": KEY_A, "2027-03": KEY_B}, None, "say which encrypts"),
        ({"a.b": KEY_A}, "a.b", "key id 'a.b'"),
        ({}, None, "needs keys"),
    ],
)
def test_a_bad_key_fails_at_once_naming_it(keys, current, message):
    with pytest.raises(ValueError, match=message):
        AesGcmPayloadCodec(keys=keys, current=current)


def test_the_only_key_is_the_current_one_and_repr_hides_the_keys():
    codec = AesGcmPayloadCodec(keys={"only": KEY_A})
    assert codec.current == "only"
    assert KEY_A not in repr(codec) and "only" in repr(codec)


def test_a_changed_payload_or_one_read_elsewhere_fails_to_decrypt():
    codec = aes()
    stored = codec.encode({"card": SECRET}, "instance-a")
    with pytest.raises(wf.WorkflowPayloadError, match="changed, or moved"):
        codec.decode(stored, "instance-b")
    body = stored[:-4] + ("AAAA" if not stored.endswith("AAAA") else "BBBB")
    with pytest.raises(wf.WorkflowPayloadError, match="changed, or moved"):
        codec.decode(body, "instance-a")


def test_payloads_of_1_kib_or_more_are_compressed_unless_turned_off():
    big = {"items": ["kibble"] * 400}  # 3.6 KiB of JSON that compresses well
    compressed = aes().encode(big, "x")
    plain = aes(compress=False).encode(big, "x")
    assert len(compressed) < len(json.dumps(big)) / 4 < len(plain)
    assert aes().decode(plain, "x") == big == aes().decode(compressed, "x")
    small = {"n": 1}
    assert len(aes().encode(small, "x")) == len(aes(compress=False).encode(small, "x"))


# -- what the store keeps ------------------------------------------------------------------------


def test_everything_that_holds_data_is_encrypted_and_the_rest_stays_readable(
    settings, workflow_clock, world
):
    use_codec(settings, aes())
    secret_order = order(id="o-7", user_id="u_secret@example.com")
    secret_order["card"] = SECRET
    wf.start("order-fulfilment", secret_order, id="order-7")
    wf.drain()
    wf.signal("shipment.delivered", {"trackingNumber": "TRK-SECRET"}, key="o-7")
    wf.drain()
    workflow_clock.advance("7d")
    wf.drain()
    wf.start("wait-once", {"key": "x"}, id="to-cancel")
    wf.drain()
    wf.cancel("to-cancel", reason="customer SECRET-REASON asked")
    wf.drain()

    stored = raw_rows("order-7") + raw_rows("to-cancel")
    for secret in (SECRET, "u_secret@example.com", "TRK-SECRET", "SECRET-REASON"):
        assert secret not in stored, secret
    assert "$wf1:aes-256-gcm:2026-09." in stored
    # what the store matches, filters, orders or counts on stays readable
    row = WorkflowInstance.objects.get(pk="order-7")
    assert (row.workflow, row.status) == ("order-fulfilment", "completed")
    assert row.custom_status.startswith("$wf1:aes-256-gcm:2026-09.")
    cancelled = WorkflowInstance.objects.get(pk="to-cancel")
    assert cancelled.error["name"] == "WorkflowCancelledError"
    assert "customer" not in json.dumps(cancelled.error)
    names = set(JournalEntry.objects.filter(instance_id="order-7").values_list("name", flat=True))
    assert {"charge-payment", "reserve-stock", "await-delivery"} <= names
    signal = Signal.objects.get(name="shipment.delivered")
    assert signal.key == "o-7"

    # and the client reads it all back
    status = wf.get_status("order-7", journal=True)
    assert status.input == secret_order
    assert status.output["tracking_number"] == "TRK-SECRET"
    assert status.custom_status == "delivered"
    charge = next(e for e in status.journal if e.name == "charge-payment")
    assert charge.result["charge_id"].startswith("ch_")
    # The whole charge id, not its "ch_": three characters that base64url ciphertext holds by chance.
    assert charge.result["charge_id"] not in stored
    assert wf.get_status("to-cancel").error == {
        "name": "WorkflowCancelledError",
        "message": "customer SECRET-REASON asked",
    }
    assert wf.result("order-7")["tracking_number"] == "TRK-SECRET"


def test_errors_keep_their_names_and_hide_their_messages(settings, workflow_clock, world):
    use_codec(settings, aes())
    world.failures["charge"] = 99
    wf.start("flaky", {"retry": {"attempts": 1}}, id="declined")
    wf.drain()
    row = WorkflowInstance.objects.get(pk="declined")
    assert row.error["name"] == "StepFailedError"
    status = wf.get_status("declined", journal=True)
    assert status.error["name"] == "StepFailedError" and status.error["step"] == "call"
    message = status.error["cause"]["message"]
    assert message and message not in raw_rows("declined")
    with pytest.raises(wf.WorkflowFailedError) as failed:
        wf.result("declined")
    assert failed.value.cause["step"] == "call"


def test_a_payload_moved_to_another_instance_fails_to_read(settings, workflow_clock):
    use_codec(settings, aes())
    wf.start("wait-once", {"key": "mine"}, id="a")
    wf.start("wait-once", {"key": "theirs"}, id="b")
    stolen = WorkflowInstance.objects.get(pk="a").input
    WorkflowInstance.objects.filter(pk="b").update(input=stolen)
    with pytest.raises(wf.WorkflowPayloadError, match="moved from another"):
        wf.get_status("b")
    assert wf.get_status("a").input == {"key": "mine"}


def test_start_again_with_the_same_input_finds_the_instance(settings, workflow_clock):
    use_codec(settings, aes())
    first = wf.start("wait-once", {"key": "k"}, id="same")
    again = wf.start("wait-once", {"key": "k"}, id="same")
    assert (first.created, again.created) == (True, False)
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.start("wait-once", {"key": "other"}, id="same")


def test_a_checkpoint_is_encrypted_and_given_back_to_the_next_attempt(settings, workflow_clock):
    from django_workflows.store import payloads

    use_codec(settings, aes())
    doc = payloads.encode_document("i", "step", {"kind": "step", "progress": {"page": 7}})
    assert doc["kind"] == "step" and doc["progress"].startswith("$wf1:")
    assert payloads.decode_document("i", "step", doc)["progress"] == {"page": 7}
    with pytest.raises(wf.WorkflowPayloadError):
        payloads.decode_document("i", "other-step", doc)


# -- rotating keys, adding and replacing codecs --------------------------------------------------


def test_rotating_keys_reads_old_payloads_and_writes_new_ones_under_the_current_key(
    settings, workflow_clock
):
    use_codec(settings, aes())
    wf.start("wait-once", {"key": "k"}, id="rotating")
    wf.drain()  # suspended, its input under 2026-09
    use_codec(settings, aes({"2027-03": KEY_B, "2026-09": KEY_A}, current="2027-03"))
    wf.signal("ping", {"n": 1}, key="k")
    wf.drain()
    row = WorkflowInstance.objects.get(pk="rotating")
    assert row.input.startswith("$wf1:aes-256-gcm:2026-09.")  # not re-encrypted in bulk
    assert row.output.startswith("$wf1:aes-256-gcm:2027-03.")
    assert wf.get_status("rotating").output == {"n": 1}


def test_an_instance_whose_key_is_not_listed_is_left_alone_until_the_key_is_back(
    settings, workflow_clock, caplog
):
    use_codec(settings, aes())
    wf.start("wait-once", {"key": "k"}, id="locked")
    wf.start("wait-once", {"key": "k"}, id="listed-ok")
    wf.drain()
    wf.signal("ping", {"n": 1}, key="k")
    use_codec(settings, aes({"2027-03": KEY_B}, current="2027-03"))  # 2026-09 dropped

    with pytest.raises(wf.WorkflowPayloadError, match="'2026-09'"):
        wf.get_status("locked")
    listed = {s.id: s for s in wf.list_instances(workflow="wait-once")}
    assert listed["locked"].input is None and listed["locked"].status == "suspended"
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        assert wf.drain() == 2  # claimed, found unreadable, handed back without running
    assert "cannot be read" in caplog.text and "2026-09" in caplog.text
    row = WorkflowInstance.objects.get(pk="locked")
    assert (row.status, row.runs, row.lease_token) == ("suspended", 1, None)
    assert wf.drain() == 0  # left alone for a minute

    use_codec(settings, aes({"2027-03": KEY_B, "2026-09": KEY_A}, current="2027-03"))
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.get_status("locked").output == {"n": 1}
    assert wf.get_status("locked").runs == 2


def test_a_signal_whose_key_is_not_listed_leaves_its_waiter_alone(settings, workflow_clock):
    wf.start("wait-once", {"key": "k"}, id="waiter")  # stored before any codec: plain
    wf.drain()
    use_codec(settings, aes())
    wf.signal("ping", {"n": 2}, key="k")
    use_codec(settings, aes({"2027-03": KEY_B}, current="2027-03"))
    wf.drain()
    row = WorkflowInstance.objects.get(pk="waiter")
    assert (row.status, row.runs) == ("suspended", 1)
    assert [(w.signal, w.key) for w in wf.get_status("waiter").waits] == [("ping", "k")]
    use_codec(settings, aes({"2027-03": KEY_B, "2026-09": KEY_A}, current="2027-03"))
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.get_status("waiter").output == {"n": 2}


def test_adding_a_codec_breaks_no_running_instance(settings, workflow_clock, world):
    wf.start("order-fulfilment", order(id="o-9"), id="order-9")  # no codec yet: plain
    wf.drain()
    assert WorkflowInstance.objects.get(pk="order-9").input == order(id="o-9")
    use_codec(settings, aes())
    wf.signal("shipment.delivered", {"trackingNumber": "T9"}, key="o-9")
    wf.drain()
    workflow_clock.advance("7d")
    wf.drain()
    status = wf.get_status("order-9", journal=True)
    assert status.status == "completed" and status.output["tracking_number"] == "T9"
    assert WorkflowInstance.objects.get(pk="order-9").output.startswith("$wf1:")


def test_replacing_a_codec_the_first_encodes_and_each_decodes_its_own(settings, workflow_clock):
    use_codec(settings, "tests.testapp.codecs.Base64Codec")
    wf.start("wait-once", {"key": "k"}, id="replaced")
    wf.drain()
    assert WorkflowInstance.objects.get(pk="replaced").input.startswith("$wf1:b64:")
    use_codec(settings, aes(), "tests.testapp.codecs.Base64Codec")
    wf.signal("ping", {"n": 3}, key="k")
    wf.drain()
    row = WorkflowInstance.objects.get(pk="replaced")
    assert row.input.startswith("$wf1:b64:") and row.output.startswith("$wf1:aes-256-gcm:")
    assert wf.get_status("replaced").input == {"key": "k"}
    use_codec(settings, aes())  # the old codec gone: what it encoded cannot be read
    with pytest.raises(wf.WorkflowPayloadError, match="'b64'"):
        wf.get_status("replaced")


# -- configuration -------------------------------------------------------------------------------


def check_ids(settings) -> list[str]:
    return [m.id for m in run_checks() if m.id.startswith("django_workflows.")]


def test_a_bad_codec_setting_is_reported_by_the_system_checks(settings):
    settings.DJANGO_WORKFLOWS = {"CODEC": "tests.testapp.codecs.NoSuchCodec"}
    assert "django_workflows.E006" in check_ids(settings)
    settings.DJANGO_WORKFLOWS = {"CODEC": "tests.testapp.codecs.BrokenCodec"}
    assert "django_workflows.E006" in check_ids(settings)
    settings.DJANGO_WORKFLOWS = {"CODEC": [aes(), aes()]}
    assert "django_workflows.E006" in check_ids(settings)
    settings.DJANGO_WORKFLOWS = {"CODEC": object()}
    assert "django_workflows.E006" in check_ids(settings)
    settings.DJANGO_WORKFLOWS = {"CODEC": aes()}
    assert "django_workflows.E006" not in check_ids(settings)


def test_a_bad_codec_setting_fails_start_before_anything_is_written(settings, workflow_clock):
    settings.DJANGO_WORKFLOWS = {"CODEC": "tests.testapp.codecs.NoSuchCodec"}
    with pytest.raises(ValueError, match="cannot import"):
        wf.start("wait-once", {"key": "k"}, id="never")
    assert not WorkflowInstance.objects.filter(pk="never").exists()


def test_the_codec_setting_takes_effect_at_once(settings, workflow_clock):
    settings.DJANGO_WORKFLOWS = {}
    wf.start("wait-once", {"key": "k"}, id="plain")
    use_codec(settings, aes())
    wf.start("wait-once", {"key": "k"}, id="secret")
    assert WorkflowInstance.objects.get(pk="plain").input == {"key": "k"}
    assert WorkflowInstance.objects.get(pk="secret").input.startswith("$wf1:aes-256-gcm:")


def test_the_admin_shows_decrypted_payloads_and_says_which_it_cannot_read(
    settings, workflow_clock, admin_client
):
    from django.contrib.admin.utils import quote
    from django.urls import reverse

    use_codec(settings, aes())
    wf.start("wait-once", {"key": "k", "note": "visible-to-staff"}, id="shown")
    wf.drain()
    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote("shown")])
    assert "visible-to-staff" in admin_client.get(url).content.decode()
    use_codec(settings, aes({"2027-03": KEY_B}, current="2027-03"))
    page = admin_client.get(url).content.decode()
    assert page.count("unreadable") >= 1 and "2026-09" in page
    assert "visible-to-staff" not in page
