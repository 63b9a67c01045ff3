"""Starting one occurrence's instance: idempotent, as its id is `<schedule id>@<time>`, so a
worker that repeats the work after a crash starts nothing twice.
"""

from __future__ import annotations

from datetime import datetime

from ..definitions import Schedule, ScheduleOccurrence, Workflow
from ..engine.registry import registry
from ..engine.starts import StartOptions, start_instance
from ..errors import WorkflowIdConflictError
from ..models import WorkflowInstance, WorkflowSchedule
from .declared import declared_in_code
from .ids import occurrence_id


def start_occurrence(
    using: str,
    schedule: WorkflowSchedule,
    at: datetime,
    *,
    definition: Workflow | None = None,
    declaration: Schedule | None = None,
) -> tuple[str, bool]:
    """Start the instance of one occurrence (idempotent: its id is `<schedule id>@<time>`).
    Returns its id, and whether this call created it. `definition` and `declaration` (the
    code's Schedule, for an input function) are looked up when not given.

    Raises WorkflowIdConflictError when an instance that this schedule did not start holds the
    id (start() refuses such ids now; older code took them)."""
    if definition is None:
        definition = _definition(schedule)
    if declaration is None and schedule.declared:
        found = declared_in_code().get(schedule.pk)
        declaration = found[1] if found is not None else None
    id = occurrence_id(schedule.pk, at)
    input = schedule.input
    if declaration is not None and callable(declaration.input):
        input = declaration.input(ScheduleOccurrence(schedule.pk, at))
    try:
        options = StartOptions(
            id=id, priority=schedule.spec.get("priority"), schedule_id=schedule.pk, scheduled_at=at
        )
        result = start_instance(definition, input, options, using=using)
    except WorkflowIdConflictError:
        ours = WorkflowInstance.objects.using(using).filter(pk=id, schedule_id=schedule.pk)
        if not ours.exists():
            raise WorkflowIdConflictError(
                f"Instance {id!r} has the id of schedule {schedule.pk!r}'s occurrence at "
                f"{at.isoformat()}, but the schedule did not start it: the occurrence cannot "
                f"start."
            ) from None
        # Started before (with another input), by a worker whose write did not land: done.
        return id, False
    return id, result.created


def _definition(schedule: WorkflowSchedule) -> Workflow:
    return registry.resolve(schedule.workflow, schedule.version)
