"""What one database takes in a stored value: the checks of jsonvalues, plus NUL on
PostgreSQL and the size the database `using` takes in one value, before any write."""

from __future__ import annotations

import json
from typing import Any

from .. import codecs
from ..jsonvalues import UnstorableValueError, check_value, dumps
from .backends import backend

PACKET_MARGIN = 64 * 1024
"""Room left in a MariaDB/MySQL packet for the rest of the statement around a value."""


def to_json(value: Any, what: str, *, using: str | None = None) -> Any:
    """`value` in its JSON form (a tuple becomes a list), checked to be storable.

    Raises TypeError naming `what` if it is not JSON, UnstorableValueError (a
    ValueError) naming it and where in it the problem is for a lone surrogate, a NUL on
    PostgreSQL, nesting deeper than MAX_DEPTH, or more bytes than the database `using` takes.
    """
    check_value(value, what, nul=using is not None and backend(using).rejects_nul)
    text = dumps(value, what)
    if using is not None:
        check_size(text, what, using)
    return json.loads(text)


def check_size(text: str, what: str, using: str) -> None:
    """Refuse JSON text (as jsonvalues.dumps() writes it, non-ASCII characters as they are)
    larger than the database `using` takes in one value, with UnstorableValueError naming
    `what`, the size and the limit."""
    store = backend(using)
    packet = store.max_allowed_packet()
    size = len(text) if text.isascii() else len(text.encode())  # the bytes of its UTF-8
    if packet is not None:
        # The driver sends the text as an escaped SQL literal: a quote or backslash takes two.
        length = size + text.count("\\") + text.count('"') + text.count("'")
        if codecs.configured_codecs():  # stored encrypted: base64 of at most its UTF-8 form
            length = max(length, size * 4 // 3 + 1024)
        if length > packet - PACKET_MARGIN:
            raise UnstorableValueError(
                f"{what} takes {length} bytes as JSON, more than the server's "
                f"max_allowed_packet takes ({packet} bytes, less {PACKET_MARGIN} for the rest "
                f"of the statement)."
            )
    elif size > store.max_value_bytes:
        raise UnstorableValueError(
            f"{what} takes {size} bytes as JSON, more than "
            f"{store.connection.display_name} stores in one value ({store.max_value_bytes} bytes)."
        )
