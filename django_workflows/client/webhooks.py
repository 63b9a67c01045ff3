"""A durable webhook's delivery: the POST the view hands over, checked against its token
(engine/webhooks.py signs and reads tokens) and stored once as the engine's own signal
`$webhook` under the webhook's key: a second delivery finds the first and stores nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from .. import clock
from ..conf import database_alias
from ..engine.starts import wake_on_commit
from ..engine.webhooks import mint_entry, read, wait_entry
from ..events import emit
from ..models import UNFINISHED, JournalEntry, Status, WorkflowInstance
from ..store.backends import backend
from ..store.deadlocks import retries_deadlocks
from ..store.signals import WEBHOOK_SIGNAL, record_signal, timed_out

COMPLETED = "completed"  # a journal entry's status once done (engine/journal.py's)


def deliver(token: str, body: Any, *, using: str | None = None) -> bool:
    """Deliver `body` (JSON, checked by the caller) to the webhook of `token`, exactly once.

    Returns False, storing nothing, for a token that `read()` refuses, an instance that is
    unknown, finished, compensating, asked to cancel or terminate, or did not mint it (its
    journal's entry is written before the step that hands the URL out runs), a webhook
    delivered before, and one whose wait is past its deadline, whether or not a worker has
    taken the timer yet (the engine's rule: a signal recorded at or after the deadline loses
    to the timer); True once the body is
    stored as the signal the webhook's wait takes (it wakes the instance at commit, and sends
    `webhook-received`). Joins the caller's transaction.
    """
    parts = read(token)
    if parts is None:
        return False
    instance_id, name, key = parts
    using = database_alias(using)

    @retries_deadlocks
    def record(using: str) -> bool:
        with transaction.atomic(using=using, savepoint=False):
            # The signal lock first, as every signal takes it: under it, the instance's status
            # and the earlier delivery are read in the order the signals are recorded.
            backend(using).lock_signals(shared=False)
            row = (
                WorkflowInstance.objects.using(using)
                .filter(pk=instance_id)
                .values_list(
                    "status", "workflow", "version", "cancel_requested", "terminate_requested"
                )
                .first()
            )
            # An instance that will run no further wait (ended, undoing, asked to cancel or
            # terminate) would never read the body: refused, as update() refuses.
            if row is None or row[0] not in UNFINISHED or row[0] == Status.COMPENSATING:
                return False
            if row[3] or row[4]:
                return False
            # The instance must have minted this very webhook (not an instance deleted and
            # started again under the same id), and its wait must not be over (timed out).
            entries = dict(
                JournalEntry.objects.using(using)
                .filter(instance_id=instance_id, name__in=[mint_entry(name), wait_entry(name)])
                .values_list("name", "document")
            )
            minted, waited = entries.get(mint_entry(name)), entries.get(wait_entry(name))
            if minted is None or minted.get("key") != key:
                return False
            if waited is not None and waited.get("status") == COMPLETED:
                return False
            now = clock.now()
            if waited is not None and timed_out(waited, now):
                return False  # the timer has won the wait, whenever a worker gets to it
            recorded = record_signal(
                using,
                name=WEBHOOK_SIGNAL,
                key=key,
                dedupe_id=key,
                payload=body,
                now=now,
                locked=True,
            )
            if not recorded.created:
                return False
            wake_on_commit(using)
            workflow, version = row[1], row[2]
            transaction.on_commit(
                lambda: emit(
                    "webhook-received",
                    id=instance_id,
                    workflow=workflow,
                    version=version,
                    at=clock.now(),
                    webhook=name,
                    signal_id=recorded.id,
                ),
                using=using,
            )
            return True

    return bool(record(using))
