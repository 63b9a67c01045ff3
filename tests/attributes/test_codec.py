"""With a codec, tags and attributes are stored plain (they exist to be searched), while the
input and the journal entry of ctx.set_attributes() are encoded as every payload is."""

from __future__ import annotations

import base64

import pytest

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import InstanceAttribute, InstanceTag, JournalEntry, WorkflowInstance

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def codec(settings):
    settings.DJANGO_WORKFLOWS = {
        **getattr(settings, "DJANGO_WORKFLOWS", {}),
        "CODEC": AesGcmPayloadCodec(keys={"2026-12": base64.b64encode(b"K" * 32).decode()}),
    }


def test_tags_and_attributes_are_plain_with_a_codec(codec, define):
    @define("coded-search")
    def run(ctx, input):
        ctx.set_attributes(stage="secretly-plain")
        return "done"

    wf.start(
        "coded-search", {"card": "4242 4242"}, id="c1", tags=["express"], attributes={"tier": "pro"}
    )
    wf.drain()
    assert wf.get_status("c1").status == "completed"
    stored_input = WorkflowInstance.objects.values_list("input", flat=True).get(id="c1")
    assert "4242 4242" not in str(stored_input)  # the payload is encoded
    assert list(InstanceTag.objects.values_list("tag", flat=True)) == ["express"]
    rows = dict(InstanceAttribute.objects.values_list("name", "text"))
    assert rows == {"tier": "pro", "stage": "secretly-plain"}
    entry = JournalEntry.objects.filter(name__startswith="$attributes:").values_list(
        "document", flat=True
    )
    assert "secretly-plain" not in str(entry.get())
    assert [
        s.id for s in wf.list_instances(tag="express", attributes={"stage": "secretly-plain"})
    ] == ["c1"]
