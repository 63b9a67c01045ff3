"""The instance actions' rules: which rows each action refuses and why, and the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ..errors import WorkflowNotFoundError, WorkflowPayloadError, WorkflowStateError
from ..models import FINISHED, UNFINISHED, JournalEntry, Status, WorkflowInstance

REFUSALS_SHOWN = 10


@dataclass(frozen=True)
class Outcome:
    done: list[str]
    refused: list[tuple[str, str]]  # (id, why)
    notes: list[str] = field(default_factory=list)  # about some that were done


def unreadable(what: str, error: WorkflowPayloadError) -> str:
    """Why a row the codec cannot read was refused (or what to know about it): `what` names it
    ("order-71e1973d", "nightly's input"), the error the key it needs."""
    return f"{what} cannot be read by the CODEC setting: {error}"


def retry_refusal(row: WorkflowInstance) -> str | None:
    if row.status not in (Status.FAILED, Status.COMPENSATION_FAILED):
        return (
            f"{row.id} is {row.status}: only failed and compensation_failed instances can be "
            f"retried."
        )
    return None


def breakpoints(row: WorkflowInstance) -> list[str]:
    """The breakpoints the instance waits at (pending "breakpoint" entries), by first write."""
    documents = (
        JournalEntry.objects.using(row._state.db)
        .filter(instance_id=row.id)
        .order_by("id")
        .values_list("name", "document")
    )
    return [
        name
        for name, doc in documents
        if isinstance(doc, dict)
        and doc.get("kind") == "breakpoint"
        and doc.get("status") == "pending"
    ]


def resume_refusal(row: WorkflowInstance) -> str | None:
    """Why Resume skips this row: it is finished, or waits at no breakpoint."""
    if row.status in FINISHED:
        return f"{row.id} is {row.status}: it waits at no breakpoint."
    if not breakpoints(row):
        return f"{row.id} is not waiting at a breakpoint."
    return None


def delete_refusal(row: WorkflowInstance) -> str | None:
    if row.status in UNFINISHED:
        return f"{row.id} is {row.status}: delete an unfinished instance with force delete."
    return None


def force_refusal(row: WorkflowInstance) -> str | None:
    return None  # force delete takes any status


def apply(
    rows: QuerySet[WorkflowInstance],
    refusal: Callable[[WorkflowInstance], str | None],
    call: Callable[[WorkflowInstance], bool],
) -> Outcome:
    """Call `call` for each row `refusal` lets through; the client's refusals count as refused."""
    done: list[str] = []
    refused: list[tuple[str, str]] = []
    for row in rows.order_by("created_at", "id"):
        why = refusal(row)
        if why is None:
            try:
                if call(row):
                    done.append(row.id)
                    continue
                why = f"{row.id} changed meanwhile; the request was not accepted."
            except (WorkflowStateError, WorkflowNotFoundError) as error:
                why = str(error).replace(f"Instance {row.id!r} ", f"{row.id} ", 1)
            except WorkflowPayloadError as error:  # retry() reads the payloads first
                why = unreadable(row.id, error)
        refused.append((row.id, why))
    return Outcome(done, refused)


def report(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    verb: str,
    outcome: Outcome,
    noun: str = "instance",
    requested: bool = False,
) -> None:
    """One message: how many it did, and why it refused the others (the first ten reasons).

    `requested` says that what it did is a request a worker carries out (cancel, terminate),
    so the message does not claim it happened: "Cancel requested for 1 instance; a worker
    applies it."
    """
    count = len(outcome.done)
    done = f"{verb} {count} {noun}{'' if count == 1 else 's'}"
    if requested and count:
        done += f"; a worker applies {'it' if count == 1 else 'them'}"
    parts = [f"{done}.", *outcome.notes]
    if outcome.refused:
        reasons = [why for _, why in outcome.refused[:REFUSALS_SHOWN]]
        more = len(outcome.refused) - REFUSALS_SHOWN
        if more > 0:
            reasons.append(f"... and {more} more.")
        parts.append(f"Refused {len(outcome.refused)}: " + " ".join(reasons))
    level = (
        messages.SUCCESS
        if not outcome.refused and not outcome.notes
        else messages.WARNING
        if outcome.done
        else messages.ERROR
    )
    modeladmin.message_user(request, " ".join(parts), level)


def admin_reason(request: HttpRequest, what: str) -> str:
    """The reason a cancel or terminate records: who did it, from where."""
    return f"{what} in the admin by {request.user.get_username()}."  # type: ignore[union-attr]
