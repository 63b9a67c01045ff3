"""Small helpers shared by the core tests."""

from __future__ import annotations

from typing import Any

import django_workflows as wf


def order(id: str = "71e1973d", user_id: str = "u_42", items: list[dict[str, Any]] | None = None):
    """An order like the tutorial's."""
    return {
        "id": id,
        "user_id": user_id,
        "items": items if items is not None else [{"product": "kibble", "quantity": 1}],
        "total": 2499,
    }


def journal(id: str) -> list[tuple[str, str, str]]:
    """(name, kind, status) of every journal entry, in first-write order."""
    status = wf.get_status(id, journal=True)
    assert status is not None
    return [(e.name, e.kind, e.status) for e in status.journal]


def entry(id: str, name: str):
    status = wf.get_status(id, journal=True)
    assert status is not None
    return next(e for e in status.journal if e.name == name)


def names(id: str) -> list[str]:
    return [name for name, _, _ in journal(id)]
