"""What one database takes in a stored value: the checks of jsonvalues, plus NUL on
PostgreSQL and the size the database `using` takes in one value, before any write."""

from __future__ import annotations

import json
from typing import Any

from django.db import connections

from .. import codecs
from ..jsonvalues import UnstorableValueError, check_value, dumps
from . import vendor

MAX_BYTES = {"postgresql": 255 * 1024 * 1024, "sqlite": 1_000_000_000}
"""The most JSON, in bytes, one value may take: PostgreSQL's jsonb holds at most 255 MiB,
SQLite a string of a billion bytes; MariaDB and MySQL take what max_allowed_packet allows."""

PACKET_MARGIN = 64 * 1024
"""Room left in a MariaDB/MySQL packet for the rest of the statement around a value."""


def to_json(value: Any, what: str, *, using: str | None = None) -> Any:
    """`value` in its JSON form (a tuple becomes a list), checked to be storable.

    Raises TypeError naming `what` if it is not JSON, UnstorableValueError (a
    ValueError) naming it and where in it the problem is for a lone surrogate, a NUL on
    PostgreSQL, nesting deeper than MAX_DEPTH, or more bytes than the database `using` takes.
    """
    kind = connections[using].vendor if using is not None else None
    check_value(value, what, nul=kind == "postgresql")
    text = dumps(value, what)
    if using is not None:
        check_size(text, what, using)
    return json.loads(text)


def check_size(text: str, what: str, using: str) -> None:
    """Refuse JSON text larger than the database `using` takes in one value, with
    UnstorableValueError naming `what`, the size and the limit."""
    packet = vendor.max_allowed_packet(using)
    if packet is not None:
        # The driver sends the text as an escaped SQL literal: a quote or backslash takes two.
        length = len(text) + text.count("\\") + text.count('"') + text.count("'")
        if codecs.configured_codecs():  # stored encrypted: base64 of at most its UTF-8 form
            length = max(length, len(text) * 4 // 3 + 1024)
        limit = packet - PACKET_MARGIN
        why = (
            f"the server's max_allowed_packet takes ({packet} bytes, less {PACKET_MARGIN} for "
            f"the rest of the statement)"
        )
    else:
        length = len(text)
        limit = MAX_BYTES.get(connections[using].vendor, MAX_BYTES["sqlite"])
        why = f"{connections[using].display_name} stores in one value ({limit} bytes)"
    if length > limit:
        raise UnstorableValueError(f"{what} takes {length} bytes as JSON, more than {why}.")
