"""`workflows cancel|terminate|retry|delete|resume ID...`: each id through the client, with the
client's rules; every option and id checked before the first one is acted on; an outcome per id
(done, refused, not_found), printed as a line or as JSON, and exit status 1 when any was not
done."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from ..client import approvals, operations
from ..client import instances as client
from ..conf import database_alias
from ..engine.starts import check_key
from ..errors import WorkflowNotFoundError, WorkflowPayloadError, WorkflowStateError
from ..jsonvalues import MAX_MESSAGE, check_text
from ..results import InstanceStatus
from .documents import dumps, instance_document
from .options import command_duration

DONE, REFUSED, NOT_FOUND = "done", "refused", "not_found"


@dataclass(frozen=True)
class Outcome:
    """What became of one id: `outcome` is "done", "refused" or "not_found"; `message` the line
    printed for it; `instance` the instance as the client returned it (None when it returned
    none: delete, resume, an unknown id); `breakpoint` the one resume continued."""

    id: str
    operation: str
    outcome: str
    message: str
    instance: InstanceStatus | None = None
    breakpoint: str | None = None

    def document(self) -> dict[str, Any]:
        """The outcome as `--json` prints it."""
        document: dict[str, Any] = {
            "id": self.id,
            "operation": self.operation,
            "outcome": self.outcome,
            "message": self.message,
            "instance": None if self.instance is None else instance_document(self.instance),
        }
        if self.operation == "resume":
            document["breakpoint"] = self.breakpoint
        return document


def action_command(options: dict[str, Any], stdout: OutputWrapper, stderr: OutputWrapper) -> int:
    """Apply the subcommand to each id in turn; 0 when every one was done, else 1. Raises
    CommandError, before acting on any, for a bad id, reason, timeout or breakpoint name."""
    operation: str = options["subcommand"]
    using = database_alias(options["database"])
    ids = list(dict.fromkeys(options["ids"]))  # an id given twice is acted on once
    for id in ids:
        try:
            check_key("The instance id", id, using)
        except (TypeError, ValueError) as error:
            raise CommandError(str(error)) from None
        if not id:
            raise CommandError("An instance id must not be empty.")
    act = _operation(operation, options, using)
    outcomes = [_apply(operation, id, act) for id in ids]
    if options["json"]:
        stdout.write(dumps([outcome.document() for outcome in outcomes]))
    else:
        for outcome in outcomes:
            (stdout if outcome.outcome == DONE else stderr).write(outcome.message)
    return 0 if all(outcome.outcome == DONE for outcome in outcomes) else 1


Act = Callable[[str], Outcome]


def _operation(operation: str, options: dict[str, Any], using: str) -> Act:
    """The call for one id, its options checked now (CommandError)."""
    if operation in ("cancel", "terminate"):
        reason = _reason(operation, options["reason"])
        terminate = operation == "terminate"

        def stop(id: str) -> Outcome:
            call = client.terminate if terminate else client.cancel
            result = call(id, reason, using=using)
            if result.accepted:
                message = f"{id}: {operation} requested; a worker applies it."
                return Outcome(id, operation, DONE, message, result.instance)
            assert result.instance is not None
            refusal = f"Refused: {_not_accepted(result.instance, terminate)}"
            return Outcome(id, operation, REFUSED, refusal, result.instance)

        return stop
    if operation == "retry":
        timeout: Any = operations.UNSET
        if options["no_timeout"]:
            timeout = None
        elif options["timeout"] is not None:
            timeout = command_duration(options["timeout"], "--timeout")

        def retry(id: str) -> Outcome:
            status = operations.retry(id, timeout=timeout, using=using)
            return Outcome(id, operation, DONE, f"{id}: retried; it is {status.status}.", status)

        return retry
    if operation == "delete":
        force = options["force"]

        def delete(id: str) -> Outcome:
            operations.delete(id, force=force, using=using)
            return Outcome(id, operation, DONE, f"{id}: deleted.")

        return delete
    name = options["breakpoint"]
    if name is not None and not name:
        raise CommandError("--breakpoint must name the breakpoint, not be empty.")

    def resume(id: str) -> Outcome:
        resumed = approvals.resume(id, name, using=using)
        message = f"{id}: resumed at breakpoint {resumed!r}."
        return Outcome(id, operation, DONE, message, breakpoint=resumed)

    return resume


def _apply(operation: str, id: str, act: Act) -> Outcome:
    """`act(id)`, the client's refusals turned into outcomes."""
    try:
        return act(id)
    except WorkflowNotFoundError as error:
        return Outcome(id, operation, NOT_FOUND, str(error))
    except WorkflowStateError as error:
        why = str(error).replace(f"Instance {id!r} ", f"{id} ", 1)
        return Outcome(id, operation, REFUSED, f"Refused: {why}")
    except WorkflowPayloadError as error:  # retry() reads the payloads first
        why = f"{id} cannot be read by the CODEC setting: {error}"
        return Outcome(id, operation, REFUSED, f"Refused: {why}")


def _reason(operation: str, given: str | None) -> str:
    """The reason a cancel or terminate records: the one given (checked as the client checks
    it), else who asked, from where."""
    if given is None:
        try:
            by = f" by {getpass.getuser()}"
        except Exception:  # no user name for this uid (a container): say where it came from
            by = ""
        verb = "Cancelled" if operation == "cancel" else "Terminated"
        return f"{verb} with manage.py workflows {operation}{by}."
    if len(given) > MAX_MESSAGE:
        raise CommandError(
            f"--reason is {len(given)} characters long; the most it can be is {MAX_MESSAGE}."
        )
    try:
        check_text("--reason", given)
    except ValueError as error:
        raise CommandError(str(error)) from None
    return given


def _not_accepted(status: InstanceStatus, terminate: bool) -> str:
    """Why the client did not accept a cancel or terminate, from the instance it returned."""
    refusal = operations.cancel_refusal(status, terminate)
    return refusal or f"{status.id} changed meanwhile; the request was not accepted."
