"""JSON values are stored as UTF-8 text as it is, not with non-ASCII characters escaped: an
"é" takes the two bytes of its UTF-8, not the six of "\\u00e9", so that a value that fits the
server's max_allowed_packet as UTF-8 is stored (MariaDB and MySQL refused it, escaped, past the
packet). Every kind of text round-trips on every database: non-ASCII, 4-byte emoji, quotes,
backslashes, control characters and (but on PostgreSQL, which refuses it) NUL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.store.jsonvalues import PACKET_MARGIN

pytestmark = pytest.mark.django_db

TEXTS = {
    "accents": "été à Noël, Ærø",
    "emoji": "📦 \U0001f600 𝄞",
    "quotes": "it's \"quoted\" 'twice'",
    "backslashes": "C:\\path\\to \\u00e9 \\\\ end\\",
    "controls": "tab\tnew\nline\r\x1a\x7f",
    "nul": "before\x00after",
}


@pytest.fixture
def plain(settings: Any) -> None:
    """Without a codec, whatever the suite's CODEC=1 says: the stored text is the value's."""
    settings.DJANGO_WORKFLOWS = {}


@pytest.fixture
def echo(define: Any) -> Any:
    """`echo`: a step that returns the input, whose result the workflow returns."""

    @define("unicode-echo")
    def echo(ctx: Any, value: Any) -> Any:
        return ctx.step("echo", lambda step: value)

    return echo


def stored_bytes(table: str, column: str, where: str, param: Any) -> int:
    """The length in bytes of the column's stored text, as the database keeps it."""
    if connection.vendor == "sqlite":
        length = f"LENGTH(CAST({column} AS BLOB))"
    elif connection.vendor == "postgresql":
        length = f"OCTET_LENGTH({column}::text)"
    else:
        length = f"LENGTH({column})"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {length} FROM {table} WHERE {where} = %s", [param])
        return int(cursor.fetchone()[0])


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_text_round_trips_through_start_a_step_and_the_result(
    kind: str, plain: None, echo: Any, workflow_clock: Any
) -> None:
    text = TEXTS[kind]
    value = {"text": text, text: [text, {"nested": text}]}
    if kind == "nul" and connection.vendor == "postgresql":
        with pytest.raises(ValueError, match="NUL character"):
            wf.start(echo, value, id="text")
        return
    wf.start(echo, value, id="text")
    wf.drain()
    assert wf.result("text") == value
    status = wf.get_status("text", journal=True)
    assert status.input == value
    (entry,) = [e for e in status.journal if e.name == "echo"]
    assert entry.result == value
    row = WorkflowInstance.objects.get(pk="text")
    assert (row.input, row.output) == (value, value)


def test_non_ascii_text_is_stored_as_its_utf8(plain: None, echo: Any, workflow_clock: Any) -> None:
    text = "é" * 10_000 + "📦" * 1_000
    wf.start(echo, text, id="utf8")
    wf.drain()
    assert wf.result("utf8") == text
    utf8 = len(json.dumps(text, ensure_ascii=False).encode())  # 24,002 bytes; escaped 72,002
    instances = WorkflowInstance._meta.db_table
    for column in ("input", "output"):
        assert stored_bytes(instances, column, "id", "utf8") == utf8
    entry = JournalEntry.objects.get(instance_id="utf8", name="echo")
    stored = stored_bytes(JournalEntry._meta.db_table, "document", "id", entry.pk)
    assert utf8 < stored < utf8 + 500  # the result and the entry's own few fields


@pytest.mark.skipif(connection.vendor != "mysql", reason="MariaDB and MySQL: max_allowed_packet")
def test_a_value_that_fits_the_packet_only_as_utf8_is_stored_and_read_back(
    plain: None, echo: Any, workflow_clock: Any
) -> None:
    """Its UTF-8 takes 2/5 of max_allowed_packet, its escaped JSON 6/5 of it: it used to be
    refused before anything was written."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        packet = int(cursor.fetchone()[0])
    text = "é" * (packet // 5)
    assert len(json.dumps(text)) > packet - PACKET_MARGIN  # what the escaped form would take
    wf.start(echo, text, id="big")
    wf.drain()
    assert wf.result("big") == text
    instances = WorkflowInstance._meta.db_table
    assert stored_bytes(instances, "input", "id", "big") == 2 * len(text) + 2
    assert stored_bytes(instances, "output", "id", "big") == 2 * len(text) + 2
