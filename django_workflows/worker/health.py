"""What the workers and the queues look like now, for the admin, `workflowstatus` and a
monitoring probe: each registered worker, live or gone, and each queue's backlog of due
instances, with the alert state "a backlog that no live worker claims"."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .. import clock
from ..conf import database_alias
from ..models import WorkerProcess
from ..store import workers as store


@dataclass(frozen=True)
class WorkerInfo:
    """One registered worker process; `live` until three heartbeats pass without a refresh."""

    id: str
    host: str
    pid: int
    queues: list[str]  # empty: every queue
    workflows: list[str]  # "name@version"; empty: every workflow registered in its process
    concurrency: int
    version: str
    heartbeat: float
    started_at: datetime
    last_seen_at: datetime
    gone_at: datetime
    running: int
    executed: int
    live: bool

    def serves(self, queue: str) -> bool:
        """Whether this worker claims from `queue` (some workflows only, if it has a list)."""
        return not self.queues or queue in self.queues

    def claims(self, queue: str, workflow: str, version: int) -> bool:
        """Whether this worker claims due instances of `workflow`@`version` in `queue`."""
        return self.serves(queue) and (
            not self.workflows or f"{workflow}@{version}" in self.workflows
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`workflowstatus --json`): datetimes in ISO 8601."""
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "queues": self.queues,
            "workflows": self.workflows,
            "concurrency": self.concurrency,
            "version": self.version,
            "heartbeat": self.heartbeat,
            "started_at": self.started_at.isoformat(),
            "last_seen_at": self.last_seen_at.isoformat(),
            "live": self.live,
            "running": self.running,
            "executed": self.executed,
        }


@dataclass(frozen=True)
class QueueBacklog:
    """One queue with due instances: how many are due and not held by a worker, since when,
    the live workers that claim from it, and how many of its due instances none of them claims
    (a live worker restricted to other workflows does not claim them)."""

    queue: str
    due: int
    oldest_due_at: datetime
    workers: list[str]
    unserved: int

    @property
    def alert(self) -> bool:
        """The actionable state: due instances that no live worker claims."""
        return self.unserved > 0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`workflowstatus --json`)."""
        return {
            "queue": self.queue,
            "due": self.due,
            "oldest_due_at": self.oldest_due_at.isoformat(),
            "workers": self.workers,
            "unserved": self.unserved,
            "alert": self.alert,
        }


@dataclass(frozen=True)
class Health:
    """The workers (live first) and the queues with a backlog, as of `now`."""

    now: datetime
    workers: list[WorkerInfo]
    queues: list[QueueBacklog]

    @property
    def alerts(self) -> list[QueueBacklog]:
        """The queues with a backlog that no live worker claims."""
        return [queue for queue in self.queues if queue.alert]

    @property
    def live(self) -> list[WorkerInfo]:
        return [worker for worker in self.workers if worker.live]

    def as_dict(self) -> dict[str, Any]:
        """The JSON document `workflowstatus --json` prints."""
        return {
            "now": self.now.isoformat(),
            "workers": [worker.as_dict() for worker in self.workers],
            "queues": [queue.as_dict() for queue in self.queues],
            "alerts": [queue.queue for queue in self.alerts],
        }


def worker_info(row: WorkerProcess, now: datetime) -> WorkerInfo:
    """A registry row as of `now`: live while its gone_at is ahead."""
    return WorkerInfo(
        id=row.id,
        host=row.host,
        pid=row.pid,
        queues=list(row.queues or []),
        workflows=list(row.workflows or []),
        concurrency=row.concurrency,
        version=row.version,
        heartbeat=row.heartbeat,
        started_at=row.started_at,
        last_seen_at=row.last_seen_at,
        gone_at=row.gone_at,
        running=row.running,
        executed=row.executed,
        live=row.gone_at > now,
    )


def health(*, using: str | None = None) -> Health:
    """The registered workers and each queue's backlog now (by the workflow clock): the
    registry's rows and one aggregate of the due instances by queue. A queue that a live worker
    of some workflows only serves is counted by workflow too (a third query, which reads the
    due rows' pages): which of its due instances no live worker claims depends on them."""
    using = database_alias(using)
    now = clock.now()
    workers = [worker_info(row, now) for row in store.workers(using)]
    live = [worker for worker in workers if worker.live]
    totals = store.queue_backlog(using, now=now)
    narrow = [
        total.queue
        for total in totals
        if any(worker.workflows and worker.serves(total.queue) for worker in live)
    ]
    by_queue: dict[str, list[store.Due]] = {}
    for due in store.backlog(using, now=now, queues=narrow) if narrow else []:
        by_queue.setdefault(due.queue, []).append(due)
    queues = []
    for total in totals:
        if total.queue in narrow:
            dues = by_queue.get(total.queue)
            if dues:  # else claimed between the two reads
                queues.append(_by_workflow(total.queue, dues, live))
            continue
        serving = sorted(worker.id for worker in live if worker.serves(total.queue))
        queues.append(
            QueueBacklog(
                queue=total.queue,
                due=total.count,
                oldest_due_at=total.oldest,
                workers=serving,
                unserved=0 if serving else total.count,
            )
        )
    return Health(now=now, workers=workers, queues=queues)


def _by_workflow(queue: str, dues: list[store.Due], live: list[WorkerInfo]) -> QueueBacklog:
    """A queue's backlog from its due instances by workflow version: the live workers that
    claim some of them, and how many none of them claims."""
    claiming = sorted({w.id for w in live for d in dues if w.claims(queue, d.workflow, d.version)})
    unserved = sum(
        d.count for d in dues if not any(w.claims(queue, d.workflow, d.version) for w in live)
    )
    return QueueBacklog(
        queue=queue,
        due=sum(d.count for d in dues),
        oldest_due_at=min(d.oldest for d in dues),
        workers=claiming,
        unserved=unserved,
    )
