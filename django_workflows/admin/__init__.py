"""The admin: browse instances, signals and schedules; act on instances through the client only.

Nothing here writes a row: every action calls `cancel()`, `terminate()`, `retry()` or
`delete()` per selected instance (`pause()`, `resume()` or `trigger()` per selected schedule),
skips the ones it does not apply to, and says why. The worker registry's page is read-only,
but a gone worker's row may be deleted.
"""

from __future__ import annotations

from django.contrib import admin

from ..models import RateLimitWindow, Signal, WorkerProcess, WorkflowInstance, WorkflowSchedule
from .browse import RateLimitWindowAdmin, SignalAdmin
from .display import STATUS_COLOURS, status_badge
from .instances import WorkflowInstanceAdmin
from .schedules import WorkflowScheduleAdmin
from .subjects import WorkflowInstanceInline
from .timeline import build_timeline
from .workers import WorkerProcessAdmin

__all__ = [
    "STATUS_COLOURS",
    "RateLimitWindowAdmin",
    "SignalAdmin",
    "WorkflowInstanceAdmin",
    "WorkerProcessAdmin",
    "WorkflowInstanceInline",
    "WorkflowScheduleAdmin",
    "build_timeline",
    "status_badge",
]

admin.site.register(WorkflowInstance, WorkflowInstanceAdmin)
admin.site.register(Signal, SignalAdmin)
admin.site.register(WorkflowSchedule, WorkflowScheduleAdmin)
admin.site.register(RateLimitWindow, RateLimitWindowAdmin)
admin.site.register(WorkerProcess, WorkerProcessAdmin)
