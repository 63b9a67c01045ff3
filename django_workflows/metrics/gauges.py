"""What the database knows, as Prometheus gauges computed at each scrape of `view` by three
aggregate queries (the ones the admin's workers page and `workflowstatus` use, and a count by
workflow and status):

- `django_workflows_instances{workflow,status}`: the instances of each workflow in each status;
- `django_workflows_backlog{queue}`: the instances due now that no worker holds;
- `django_workflows_oldest_due_seconds{queue}`: how long the oldest of those has been due;
- `django_workflows_workers_live{queue}`: the live workers that claim from the queue (one
  started without --queue claims from every queue).

A queue appears once a registered workflow, a due instance or a live worker names it, with 0
when it has nothing due, so its series do not vanish while it is idle.

Access: staff users, or a request with `Authorization: Bearer <METRICS_TOKEN>`; 403 otherwise,
401 for a bearer token that is not the setting's.
"""

from __future__ import annotations

import hmac
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .. import clock
from ..conf import database_alias, get_settings
from ..engine.registry import registry
from ..store import workers as store
from .counters import client


def _allowed(request: HttpRequest) -> int:
    """200 for a staff user or the right bearer token, 401 for a wrong token, else 403."""
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return 200
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return 403
    token = get_settings().metrics_token
    if token and hmac.compare_digest(given.strip().encode(), token.encode()):
        return 200
    return 401


def families(using: str | None = None, now: datetime | None = None) -> list[Any]:
    """The four gauges' metric families, read from the database `using` as of `now`."""
    prometheus = client().metrics_core
    using = database_alias(using)
    now = now or clock.now()
    instances = prometheus.GaugeMetricFamily(
        "django_workflows_instances",
        "Instances of each workflow in each status.",
        labels=["workflow", "status"],
    )
    for workflow, status, count in store.instance_counts(using):
        instances.add_metric([workflow, status], count)
    due: dict[str, int] = {}
    oldest: dict[str, datetime] = {}
    for backlog in store.queue_backlog(using, now=now):
        due[backlog.queue] = backlog.count
        oldest[backlog.queue] = backlog.oldest
    live = [row for row in store.workers(using) if row.gone_at > now]
    queues = set(due) | {definition.queue for definition in registry.all()}
    queues |= {queue for row in live for queue in row.queues or []}
    backlog_family = prometheus.GaugeMetricFamily(
        "django_workflows_backlog",
        "Instances due now that no worker holds, by queue.",
        labels=["queue"],
    )
    oldest_family = prometheus.GaugeMetricFamily(
        "django_workflows_oldest_due_seconds",
        "Seconds since the oldest instance of the backlog became due, by queue (0: none due).",
        labels=["queue"],
    )
    workers_family = prometheus.GaugeMetricFamily(
        "django_workflows_workers_live",
        "Live worker processes that claim from the queue.",
        labels=["queue"],
    )
    for queue in sorted(queues):
        backlog_family.add_metric([queue], due.get(queue, 0))
        since = oldest.get(queue)
        oldest_family.add_metric([queue], max(0.0, (now - since).total_seconds()) if since else 0)
        claiming = sum(1 for row in live if not row.queues or queue in row.queues)
        workers_family.add_metric([queue], claiming)
    return [instances, backlog_family, oldest_family, workers_family]


class _Snapshot:
    """A collector of families computed once, for one scrape's registry."""

    def __init__(self, found: list[Any]):
        self.found = found

    def collect(self) -> list[Any]:
        return self.found


@never_cache
@require_safe
def view(request: HttpRequest) -> HttpResponse:
    """The gauges in Prometheus' text format, for staff users and the METRICS_TOKEN bearer."""
    status = _allowed(request)
    if status == 401:
        response = HttpResponse(
            "The bearer token is not DJANGO_WORKFLOWS['METRICS_TOKEN'].\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="django_workflows metrics"'
        return response
    if status == 403:
        return HttpResponse(
            "The workflow metrics are for staff users, or a request with "
            "`Authorization: Bearer <DJANGO_WORKFLOWS['METRICS_TOKEN']>`.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    prometheus = client()
    scrape = prometheus.CollectorRegistry(auto_describe=False)
    scrape.register(_Snapshot(families()))
    return HttpResponse(
        prometheus.generate_latest(scrape), content_type=prometheus.CONTENT_TYPE_LATEST
    )
