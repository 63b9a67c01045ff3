"""A codec of an application's own, for the tests: base64 of the JSON, bound to where it is."""

from __future__ import annotations

import base64
import json
from typing import Any

from django_workflows.errors import WorkflowPayloadError


class Base64Codec:
    id = "b64"

    def encode(self, value: Any, where: str) -> str:
        return base64.b64encode(json.dumps([where, value]).encode()).decode()

    def decode(self, stored: str, where: str) -> Any:
        stored_where, value = json.loads(base64.b64decode(stored))
        if stored_where != where:
            raise WorkflowPayloadError(f"The payload at {where} was stored at {stored_where}.")
        return value


class BrokenCodec:
    """Gives back something else than it was given: the system check catches it."""

    id = "broken"

    def encode(self, value: Any, where: str) -> str:
        return "x"

    def decode(self, stored: str, where: str) -> Any:
        return None
