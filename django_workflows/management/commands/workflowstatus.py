"""manage.py workflowstatus [--json]: the registered workers and each queue's backlog; exit 2
when a queue has due instances that no live worker claims (for a monitoring probe)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli.options import command_database
from ...worker.health import Health, health

ALERT_EXIT_CODE = 2


class Command(BaseCommand):
    help = (
        "Print the worker processes (live or gone) and each queue's backlog of due instances; "
        "exit 2 when a queue has a backlog that no live worker claims."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON document.")
        parser.add_argument("--database", default=None, help="The database alias of the workflows.")

    def handle(self, *args: Any, **options: Any) -> None:
        using = command_database(options["database"])
        state = health(using=using)
        if options["json"]:
            self.stdout.write(json.dumps(state.as_dict(), indent=2))
        else:
            self.stdout.write("\n".join(lines(state)))
        if state.alerts:
            names = ", ".join(queue.queue for queue in state.alerts)
            raise CommandError(
                f"{len(state.alerts)} queue(s) with due instances that no live worker claims: "
                f"{names}.",
                returncode=ALERT_EXIT_CODE,
            )


def lines(state: Health) -> list[str]:
    """The text report: the workers, then the queues with due instances."""
    gone = len(state.workers) - len(state.live)
    out = [f"Workers: {len(state.live)} live, {gone} gone."]
    for worker in state.workers:
        out.append(
            f"  {'live' if worker.live else 'GONE'}  {worker.id}  host {worker.host} pid "
            f"{worker.pid}  queues {', '.join(worker.queues) or '(every queue)'}"
            f"{'  workflows ' + ', '.join(worker.workflows) if worker.workflows else ''}  "
            f"running {worker.running}/{worker.concurrency}  executed {worker.executed}  "
            f"last seen {_ago(state.now, worker.last_seen_at)}  version {worker.version}"
        )
    if not state.queues:
        out.append("Queues: nothing is due.")
        return out
    out.append("Queues with due instances:")
    for queue in state.queues:
        served = (
            f"NO LIVE WORKER claims {queue.unserved}"
            if queue.alert
            else f"{len(queue.workers)} live worker(s)"
        )
        out.append(
            f"  {'ALERT' if queue.alert else 'ok'}  {queue.queue}  due {queue.due}  oldest "
            f"due {_ago(state.now, queue.oldest_due_at)}  {served}"
        )
    return out


def _ago(now: datetime, then: datetime) -> str:
    seconds = max(0.0, (now - then).total_seconds())
    when = then.isoformat(timespec="seconds")
    if seconds < 120:
        return f"{seconds:.0f}s ago ({when})"
    if seconds < 7200:
        return f"{seconds / 60:.0f}min ago ({when})"
    return f"{seconds / 3600:.1f}h ago ({when})"
