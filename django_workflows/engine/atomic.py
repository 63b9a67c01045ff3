"""Atomic steps (ctx.step(..., atomic=True)): the step's function runs inside
`transaction.atomic(using=<the workflows' alias>)` on the thread that runs the step, and its
journal entry is written in that same transaction, so the step's ORM writes on that alias and
its "completed" commit together or not at all. A failed attempt, a lost lease or a killed
worker rolls both back; the retry runs the function again on a clean slate.

Only writes on the workflows' alias, made on the step's own thread, are covered: a call to
another system inside the function is still at-least-once."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from django.db import Error, connections, transaction

from .. import errors
from ..store.backends import backend
from ..store.jsonvalues import to_json as store_json
from . import journal
from .faults import call_store
from .interrupts import HandBack, StoreFailed

if TYPE_CHECKING:
    from .surface import Surface

logger = logging.getLogger("django_workflows")


def check(
    x: Surface, name: str, fn: Callable[..., Any], atomic: Any, timeout: Any, heartbeat: Any
) -> bool:
    """`atomic` checked: WorkflowDefinitionError for a value that is not a bool, for an atomic
    step with a timeout or heartbeat_timeout (a thread cannot be stopped inside a transaction)
    and for an async def function (its ORM calls would run on another thread's connection)."""
    if not isinstance(atomic, bool):
        raise x.guards.define_error(
            errors.WorkflowDefinitionError(
                f'Step "{name}": atomic must be True or False, got {atomic!r}.'
            )
        )
    if not atomic:
        return False
    if timeout is not None or heartbeat is not None:
        which = "timeout" if timeout is not None else "heartbeat_timeout"
        raise x.guards.define_error(
            errors.WorkflowDefinitionError(
                f'Step "{name}" is atomic and has a {which}: an atomic step runs inside a '
                "database transaction on the workflow's own thread, which cannot be stopped "
                f"part way. Drop the {which}, or make the step non-atomic."
            )
        )
    if inspect.iscoroutinefunction(getattr(fn, "__wrapped__", fn)):
        raise x.guards.define_error(
            errors.WorkflowDefinitionError(
                f'Step "{name}" is atomic and its function is async def: its ORM calls would '
                "run on another thread, outside the step's transaction. Make the function sync "
                "(it runs on a thread, where the ORM works)."
            )
        )
    return True


@contextlib.contextmanager
def attempt(x: Surface, atomic: bool) -> Iterator[None]:
    """The transaction of an atomic step's attempt (nothing for another step): whatever the
    block raises rolls back the function's writes and the journal entry written in it.

    A fault of the engine's own (the database refused the completion's write inside the
    transaction, or its commit) is not the step's error: the execution hands the instance
    back, due at once, and it runs again from its journal, where the attempt did not complete
    (its rows went with the transaction). The function's own database errors fail the
    attempt, as any exception does."""
    if not atomic:
        yield
        return
    done = False
    try:
        with transaction.atomic(using=x.using):
            yield
            done = True
    except StoreFailed as failed:
        if x.stops.stop_reason is not None:
            raise  # the lease is lost or about to end: the execution stops without writing
        raise _hand_back(x, "the write of its completion", failed) from failed
    except Error as error:
        if not done:
            raise  # the function's own database error: the attempt failed
        raise _hand_back(x, "the commit", error) from error


def check_usable(x: Surface, name: str) -> None:
    """After an atomic step's function returned, before the engine writes in its transaction:
    TransactionManagementError, the attempt's error, when the function left the transaction
    unusable. Django marks it for rollback on transaction.set_rollback(True) and on a database
    error raised by the ORM inside atomic(); PostgreSQL aborts it on any error of a statement
    (its client says so without a query). The journal's write would fail on it, and that is
    not a fault of the database: the attempt fails, its writes roll back, the policy decides."""
    connection = connections[x.using]
    if connection.get_rollback():
        cause = "it is marked for rollback"
    elif backend(x.using).transaction_aborted():
        cause = "PostgreSQL aborted it after a failed statement"
    else:
        return
    raise transaction.TransactionManagementError(
        f'The function of atomic step "{name}" left its transaction unusable ({cause}: '
        "transaction.set_rollback(True), or a database error caught without a savepoint). "
        "Wrap the statement that may fail in its own transaction.atomic(), and catch the error "
        "outside it."
    )


def _hand_back(x: Surface, what: str, error: BaseException) -> BaseException:
    logger.error(
        "Instance %s: the database refused %s of an atomic step's attempt (%s); the step's "
        "writes were rolled back, and the instance is handed back to run again from its "
        "journal.",
        x.instance.id,
        what,
        str(error).strip() or type(error).__name__,
    )
    x.stops.stop_reason = "hand-back"
    return x.guards.interrupted(HandBack())


def forget_attempt(
    x: Surface,
    name: str,
    position: Any,
    entry: dict[str, Any] | None,
    running: dict[str, Any],
) -> None:
    """After a fault rolled an atomic attempt back (stop reason "hand-back"): the attempt did
    not happen, so its journaled start goes back to what it was before it, with the hand-back's
    write; else the next execution would count it as an attempt that stopped with its worker."""
    if x.stops.stop_reason != "hand-back":
        return
    before = entry if entry is not None else {**running, "status": journal.PENDING, "attempt": 0}
    x.journal.record(name, position, **before)


def to_json(x: Surface, value: Any, what: str) -> Any:
    """x.lease.to_json() on this thread: the size check's read must not wait for the execution's
    thread, which may itself wait for this transaction's lock (SQLite's one writer)."""
    return call_store(x.lease, lambda: store_json(value, what, using=x.using), "a size check")


def commit_entry(x: Surface) -> None:
    """Write the journal's buffered entries (the step's completion among them) now, on this
    thread's connection, inside the step's transaction: fenced by the lease token, so a lease
    lost meanwhile rolls the step's writes back too (LeaseLost)."""
    x.lease.write_here()
