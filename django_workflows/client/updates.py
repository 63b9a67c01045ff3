"""update(): validate an update against the instance's workflow version, then store it for the
instance's ctx.wait_for_update(), on the caller's connection.

An accepted update is the engine-owned signal `$update:<name>` keyed by the instance's id,
recorded as signal() records one (durable, in the caller's transaction, waking the instance);
a refused one stores nothing.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from .. import clock
from ..conf import database_alias
from ..definitions import check_update_name
from ..engine.registry import registry
from ..engine.scope import running_step
from ..engine.starts import check_isolation, check_key, instance_status, wake_on_commit
from ..errors import WorkflowNotFoundError
from ..events import emit
from ..models import FINISHED, Signal, Status, WorkflowInstance
from ..results import InstanceStatus, UpdateResult
from ..store import instances as store
from ..store.backends import backend
from ..store.deadlocks import retries_deadlocks
from ..store.jsonvalues import to_json
from ..store.signals import UPDATE_PREFIX, RecordedSignal, record_signal, timed_out_wait

logger = logging.getLogger("django_workflows")


def update(id: str, name: str, arg: Any = None, *, using: str | None = None) -> UpdateResult:
    """Send update `name` with `arg` to the instance `id`, for its ctx.wait_for_update(name).

    The validator its workflow version registered for `name` (`@<workflow>.validator(name)`)
    runs first with the instance's status and `arg`: a ValidationError, a reason it returns or
    any other error it raises refuses the update (`accepted=False` with the reason), and
    nothing is stored. So is an update to an instance that will run no further wait: one that
    has ended, is compensating, or was asked to cancel or terminate; and one whose wait is past
    its timeout, whether or not a worker has run the instance since (the timer has won it). An accepted update is
    stored for the instance, which takes it with its next wait for `name` (one stored before
    the wait is kept for it), in the order updates were stored. Inside a step, an update is
    stored once however often the step is retried.

    Raises WorkflowNotFoundError for an unknown instance (or one whose workflow version this
    application does not register), WorkflowPayloadError when the codec cannot read the
    instance's payloads (the validator gets them), TypeError for a name or id that is not a string or an
    argument that is not JSON, ValueError for a bad name or id, and on PostgreSQL TypeError
    inside a transaction stricter than READ COMMITTED; all before anything is written.
    """
    using = database_alias(using)
    if not isinstance(id, str):
        raise TypeError(f"The instance id must be a string, not {type(id).__name__}.")
    check_key("The instance id", id, using)
    check_update_name(name)
    signal = UPDATE_PREFIX + name
    check_key("The update name", signal, using)
    value = to_json(arg, f'The argument of update "{name}"', using=using)
    check_isolation(using, "update()")

    row = store.get_instance(using, id)
    if row is None:
        raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
    ended = _ended(row)
    if ended is not None:
        return _refuse(row, name, ended, instance_status(row, [], strict=False))
    definition = registry.resolve(row.workflow, row.version)
    status = instance_status(row, store.load_waits(using, [id]).get(id, []))
    validator = definition.validators.get(name)
    reason = None if validator is None else _validate(validator, status, value, row, name)
    if reason is not None:
        return _refuse(row, name, reason, status)

    step = running_step.get()
    dedupe_id = None if step is None else step.signal_id(signal, id)
    recorded = _record(using, name=name, id=id, dedupe_id=dedupe_id, payload=value)
    if isinstance(recorded, str):
        return _refuse(row, name, recorded, status)
    transaction.on_commit(
        lambda: emit(
            "update-accepted",
            id=id,
            workflow=row.workflow,
            version=row.version,
            at=clock.now(),
            update=name,
            signal_id=recorded.id,
        ),
        using=using,
    )
    after = store.get_instance(using, id) or row  # as it is now: made due by the update
    waits = store.load_waits(using, [id]).get(id, [])
    return UpdateResult(True, None, instance_status(after, waits, strict=False))


def _ended(row: WorkflowInstance) -> str | None:
    """Why the instance will take no more updates, or None: it has ended, is undoing, or was
    asked to cancel or terminate (its workflow code runs no further wait)."""
    if row.status in FINISHED:
        return f"Instance {row.id!r} has ended ({row.status}): it takes no more updates."
    if row.status == Status.COMPENSATING:
        return f"Instance {row.id!r} is compensating: it takes no more updates."
    if row.cancel_requested or row.terminate_requested:
        which = "terminate" if row.terminate_requested else "cancel"
        return f"Instance {row.id!r} was asked to {which}: it takes no more updates."
    return None


def _validate(
    validator: Any, status: Any, value: Any, row: WorkflowInstance, name: str
) -> str | None:
    """None when `validator` accepts `value`, else the reason it refuses it. An error other
    than ValidationError refuses too, with its message, and is logged."""
    try:
        returned = validator(status, copy.deepcopy(value))
    except ValidationError as error:
        return "; ".join(error.messages) or "Refused by the validator."
    except Exception as error:
        logger.exception(
            "The validator of update %r of workflow %s@%s raised on instance %s",
            name,
            row.workflow,
            row.version,
            row.id,
        )
        return str(error) or type(error).__name__
    if returned is None:
        return None
    if isinstance(returned, str):
        return returned or "Refused by the validator."
    logger.error(
        "The validator of update %r of workflow %s@%s returned %r, not None or a reason",
        name,
        row.workflow,
        row.version,
        returned,
    )
    return f"The validator returned {returned!r}, not None or a reason string."


def _refuse(row: WorkflowInstance, name: str, reason: str, status: InstanceStatus) -> UpdateResult:
    emit(
        "update-rejected",
        id=row.id,
        workflow=row.workflow,
        version=row.version,
        at=clock.now(),
        update=name,
        reason=reason,
    )
    return UpdateResult(False, reason, status)


@retries_deadlocks
def _record(
    using: str, *, name: str, id: str, dedupe_id: str | None, payload: Any
) -> RecordedSignal | str:
    """Store update `name` for instance `id`, or the reason it is refused: a wait of the
    instance for it is past its deadline (the timer has won it, whenever a worker gets there).
    The check and the record share the signal lock, so no worker decides between them."""
    signal = UPDATE_PREFIX + name
    with transaction.atomic(using=using, savepoint=False):
        backend(using).lock_signals(shared=False)
        now = clock.now()
        stored = dedupe_id is not None and (
            Signal.objects.using(using).filter(name=signal, dedupe_id=dedupe_id).exists()
        )
        if not stored and timed_out_wait(using, id, signal, id, now) is not None:
            return (
                f"Instance {id!r} waited for update {name!r} with a timeout, which has passed: "
                f"the wait timed out and takes no update."
            )
        recorded = record_signal(
            using,
            name=signal,
            key=id,
            dedupe_id=dedupe_id,
            payload=payload,
            now=now,
            locked=True,
        )
        if recorded.created:
            wake_on_commit(using)
        return recorded
