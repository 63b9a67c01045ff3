"""`workflows list` and `workflows show`: the filters checked (an unknown status, workflow or
queue is a CommandError naming it, before the listing), the client's reads, and their output as
aligned columns or JSON."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, OutputWrapper

from .. import clock
from ..client.instances import get_status, list_instances
from ..conf import database_alias
from ..definitions import DEFAULT_QUEUE, check_queue
from ..engine.registry import registry
from ..engine.starts import check_key
from ..errors import WorkflowPayloadError
from ..models import FINISHED, UNFINISHED, Status, WorkerProcess, WorkflowInstance
from ..results import InstanceStatus
from .columns import Column, span, table, terminal_width, when
from .documents import dumps, inline, instance_document

LIST_COLUMNS = (
    Column("ID"),
    Column("WORKFLOW", shortest=12),
    Column("STATUS"),
    Column("QUEUE", shortest=7),
    Column("UPDATED"),
    Column("DETAIL", shortest=0),
)


def list_command(options: dict[str, Any], stdout: OutputWrapper, stderr: OutputWrapper) -> int:
    """Print the instances matching the options' filters; 0. Raises CommandError for an
    unknown status, workflow or queue, a bad subject, tag or page, naming it."""
    using = database_alias(options["database"])
    if options["json"] and options["quiet"]:
        raise CommandError("--json and --quiet go separately: choose one.")
    filters = list_filters(options, using)
    try:
        found = list_instances(using=using, **filters)
    except (TypeError, ValueError) as error:
        raise CommandError(str(error)) from None
    if options["json"]:
        stdout.write(dumps([instance_document(status) for status in found]))
    elif options["quiet"]:
        for status in found:
            stdout.write(status.id)
    elif found:
        for line in instance_table(found):
            stdout.write(line)
    else:
        stderr.write("No instances match.")
    if len(found) == filters["limit"] and not options["json"]:
        stderr.write(
            f"Showed {len(found)}, the --limit; the next page: --offset "
            f"{filters['offset'] + len(found)}."
        )
    return 0


def list_filters(options: dict[str, Any], using: str) -> dict[str, Any]:
    """list_instances()'s keyword arguments from the options, each checked: CommandError for
    an unknown status, workflow or queue, or a subject that names no model."""
    statuses = []
    for value in options["status"] or []:
        for part in value.split(","):
            if part.strip() not in Status.values:
                raise CommandError(
                    f"Unknown status {part.strip()!r}; use one of {', '.join(Status.values)}."
                )
            statuses.append(part.strip())
    workflow, queue = options["workflow"], options["queue"]
    # Checked before any query: PostgreSQL refuses a NUL in a parameter with an error.
    for option in ("workflow", "parent", "schedule"):
        try:
            check_key(f"--{option}", options[option], using)
        except ValueError as error:
            raise CommandError(str(error)) from None
    if workflow is not None and not _known_workflow(workflow, using):
        known = ", ".join(sorted({d.name for d in registry.all()})) or "none"
        raise CommandError(
            f"Unknown workflow {workflow!r}: this deployment registers no workflow of that name "
            f"and no stored instance has it (registered: {known})."
        )
    if queue is not None:
        try:
            check_queue(queue, "--queue")
        except ValueError as error:
            raise CommandError(str(error)) from None
        if not _known_queue(queue, using):
            raise CommandError(
                f"Unknown queue {queue!r}: no registered workflow, worker or stored instance "
                f"has it (the code's: {', '.join(sorted(_code_queues()))})."
            )
    return {
        "status": statuses or None,
        "workflow": workflow,
        "version": options["version"],
        "queue": queue,
        "tag": options["tag"],
        "subject": None if options["subject"] is None else subject_object(options["subject"]),
        "parent_id": options["parent"],
        "schedule_id": options["schedule"],
        "limit": options["limit"],
        "offset": options["offset"],
    }


def _known_workflow(name: str, using: str) -> bool:
    if registry.latest(name) is not None:
        return True
    return WorkflowInstance.objects.using(using).filter(workflow=name).exists()


def _code_queues() -> set[str]:
    return {DEFAULT_QUEUE, *(definition.queue for definition in registry.all())}


def _known_queue(name: str, using: str) -> bool:
    if name in _code_queues():
        return True
    if WorkflowInstance.objects.using(using).filter(queue=name).exists():
        return True
    return any(name in (queues or []) for queues in _worker_queues(using))


def _worker_queues(using: str) -> list[Any]:
    return list(WorkerProcess.objects.using(using).values_list("queues", flat=True))


def subject_object(label: str) -> Any:
    """The model instance `"app_label.model:pk"` names, for list_instances(subject=), built
    without a query (a deleted object's instances are still found). CommandError for a label
    that names no installed model, or a primary key its model cannot take."""
    model_label, sep, pk = label.partition(":")
    app_label, dot, model_name = model_label.partition(".")
    if not (sep and dot and app_label and model_name and pk):
        raise CommandError(f'--subject {label!r} must be "app_label.model:pk", as "shop.order:42".')
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        raise CommandError(f"--subject {label!r}: no installed model is {model_label!r}.") from None
    try:
        value = model._meta.pk.to_python(pk)  # type: ignore[union-attr]
    except ValidationError as error:
        raise CommandError(f"--subject {label!r}: {' '.join(error.messages)}") from None
    subject = model(pk=value)
    subject._state.adding = False  # it stands for a saved row: only its key is needed
    return subject


def instance_table(found: list[InstanceStatus]) -> list[str]:
    """The instances as aligned columns fitted to the terminal."""
    now = clock.now()
    rows = [
        [
            s.id,
            f"{s.workflow}@{s.version}",
            s.status,
            s.queue,
            f"{span(now - s.updated_at)} ago",
            detail(s),
        ]
        for s in found
    ]
    return table(LIST_COLUMNS, rows, terminal_width())


def detail(status: InstanceStatus) -> str:
    """What the list says of an instance beside its status: a requested stop, the error it
    ended with, what it waits for, the worker running it, when it is due."""
    unfinished = status.status in UNFINISHED
    if unfinished and status.terminate_requested:
        return "terminate requested"
    if unfinished and status.cancel_requested:
        return "cancel requested"
    if status.status in FINISHED:
        return _error_line(status.error) or ""
    if status.status == Status.RUNNING and status.lease_owner:
        return f"on {status.lease_owner}"
    parts = []
    if status.waits:
        # The engine's own waits ($breakpoint, $task...) are keyed by the instance's id: left out.
        signals = [
            w.signal if w.key in (None, status.id) else f"{w.signal}[{w.key}]" for w in status.waits
        ]
        parts.append("waits " + ", ".join(signals))
    if status.wake_at is not None and (status.waits or status.status == Status.SUSPENDED):
        parts.append(f"until {when(status.wake_at)}")
    elif status.wake_at is not None and status.wake_at > clock.now():
        parts.append(f"due {when(status.wake_at)}")
    return " ".join(parts)


def show_command(options: dict[str, Any], stdout: OutputWrapper, stderr: OutputWrapper) -> int:
    """Print one instance; 0. CommandError for an unknown id, one that cannot be an id, or an
    instance the codec cannot read."""
    using = database_alias(options["database"])
    try:
        check_key("The instance id", options["id"], using)
        status = get_status(
            options["id"],
            journal=options["journal"],
            children=options["children"],
            using=using,
        )
    except (TypeError, ValueError, WorkflowPayloadError) as error:
        raise CommandError(str(error)) from None
    if status is None:
        raise CommandError(f"No workflow instance has the id {options['id']!r}.")
    if options["json"]:
        stdout.write(dumps(instance_document(status)))
        return 0
    for line in describe(status):
        stdout.write(line)
    return 0


def describe(s: InstanceStatus) -> list[str]:
    """The instance as `kubectl describe` prints an object: a field a line (those not set left
    out), then its waits, values, attributes, journal and children as indented tables."""
    fields: list[tuple[str, Any]] = [
        ("Id", s.id),
        ("Workflow", f"{s.workflow}@{s.version}"),
        ("Status", s.status),
        ("Queue", s.queue),
        ("Priority", s.priority),
        ("Created", when(s.created_at)),
        ("Updated", when(s.updated_at)),
        ("Wakes", when(s.wake_at) if s.wake_at else None),
        ("Deadline", when(s.deadline) if s.deadline else None),
        ("Runs", s.runs),
        ("Generation", s.generation or None),
        ("Parent", s.parent_id),
        ("Schedule", s.schedule_id),
        ("Scheduled at", when(s.scheduled_at) if s.scheduled_at else None),
        ("Forked from", s.forked_from),
        ("Subject", s.subject),
        ("Worker" if s.status == Status.RUNNING else "Last worker", s.lease_owner),
        ("Requested", _requested(s)),
        ("Tags", ", ".join(s.tags) or None),
        ("Custom status", None if s.custom_status is None else inline(s.custom_status)),
        ("Input", inline(s.input)),
        ("Output", None if s.output is None else inline(s.output)),
        ("Error", _error_line(s.error)),
    ]
    shown = [(name, value) for name, value in fields if value is not None]
    width = max(len(name) for name, _ in shown) + 2
    lines = [f"{name + ':':<{width}}{value}" for name, value in shown]
    if s.error:
        lines += _error_details(s.error)
    sections: list[tuple[str, list[Column], list[list[str]]]] = [
        (
            "Waits",
            [Column("SIGNAL"), Column("KEY")],
            [[w.signal, "-" if w.key is None else w.key] for w in s.waits],
        ),
        (
            "Values",
            [Column("NAME"), Column("VALUE", shortest=10)],
            [[name, inline(value)] for name, value in s.values.items()],
        ),
        (
            "Attributes",
            [Column("NAME"), Column("VALUE", shortest=10)],
            [[name, inline(value)] for name, value in sorted(s.attributes.items())],
        ),
    ]
    if s.journal is not None:
        sections.append(("Journal", JOURNAL_COLUMNS, [_entry_row(e) for e in s.journal]))
    if s.children is not None:
        sections.append(
            (
                "Children",
                [Column("ID"), Column("WORKFLOW", shortest=12), Column("STATUS")],
                [[c.id, f"{c.workflow}@{c.version}", c.status] for c in s.children],
            )
        )
    for title, columns, rows in sections:
        if rows:
            lines.append(f"{title}:")
            lines += ["  " + line for line in table(columns, rows, terminal_width() - 2)]
        elif title in ("Journal", "Children"):
            lines.append(f"{title}: none")
    return lines


JOURNAL_COLUMNS = [
    Column("NAME", shortest=16),
    Column("KIND"),
    Column("STATUS"),
    Column("ATTEMPT"),
    Column("STARTED"),
    Column("TOOK"),
]


def _entry_row(entry: Any) -> list[str]:
    took = (
        span(entry.finished_at - entry.started_at)
        if entry.started_at is not None and entry.finished_at is not None
        else "-"
    )
    attempt = "-" if entry.attempt is None else str(entry.attempt)
    return [entry.name, entry.kind, entry.status, attempt, when(entry.started_at), took]


def _requested(s: InstanceStatus) -> str | None:
    if s.terminate_requested:
        return "terminate"
    if s.cancel_requested:
        return "cancel"
    return None


def _error_line(error: dict[str, Any] | None) -> str | None:
    if not error:
        return None
    name, message = error.get("name", "error"), error.get("message")
    return f"{name}: {message}" if message else str(name)


def _error_details(error: dict[str, Any]) -> list[str]:
    """The error's other keys (its cause, traceback, compensation's error), indented."""
    lines = []
    for key, value in error.items():
        if key in ("name", "message"):
            continue
        if key == "traceback" and isinstance(value, str):
            lines.append("  traceback:")
            lines += ["    " + line for line in value.rstrip().splitlines()]
        else:
            lines.append(f"  {key}: {inline(value)}")
    return lines
