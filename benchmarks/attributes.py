"""How fast list_instances(attributes=...) answers on a large table of instances.

    BENCH_DB_NAME=workflows_attributes python benchmarks/attributes.py --db postgres \
        [--instances 1000000] [--runs 7] [--explain]

With --reuse, measures the database a previous run filled. Otherwise drops, re-creates and
migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it, default here `workflows_attributes`), then fills it with plain bulk_create() batches:
N completed instances, each with four search attributes (`tier`: one of five strings, `amount`:
an int from 0 to 99,999, `placed`: a datetime over a year, `vip`: a bool, true for one in ten;
one instance in ten has a float `amount` instead) and one tag of ten. Then ANALYZE, and for each
query the median and the slowest of `--runs` calls of list_instances() (a page of 100, as the
default: the page's instances with which related tables hold their rows, then one query for
each such table, here the tags and the attributes, and the InstanceStatus objects), and the
median of the page's instances alone
(store/attributes.page(): with attribute conditions, the ids then the instances by primary
key), in milliseconds; `--explain` prints the plan of each page's first query.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = "benchmarks.settings"
BATCH = 10_000
TIERS = ["free", "basic", "pro", "team", "enterprise"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def fill(instances: int) -> None:
    """N instances with their attributes and tags, in batches of BATCH."""
    from django.db import transaction

    from django_workflows.models import (
        InstanceAttribute,
        InstanceTag,
        Status,
        WorkflowInstance,
    )

    chance = random.Random(11)
    started = time.monotonic()
    for first in range(0, instances, BATCH):
        rows, attributes, tags = [], [], []
        for n in range(first, min(first + BATCH, instances)):
            id = f"bench-{n:08d}"
            created = START + timedelta(seconds=n * 31_536_000 // instances)
            rows.append(
                WorkflowInstance(
                    id=id,
                    workflow="bench-attributes",
                    version=1,
                    status=Status.COMPLETED,
                    created_at=created,
                    updated_at=created,
                )
            )
            amount = chance.randrange(100_000)
            floating = n % 10 == 3
            attributes += [
                InstanceAttribute(
                    instance_id=id,
                    name="tier",
                    kind="str",
                    text=chance.choice(TIERS),
                    created_at=created,
                ),
                InstanceAttribute(
                    instance_id=id,
                    name="amount",
                    kind="float" if floating else "int",
                    number=amount + 0.5 if floating else amount,
                    created_at=created,
                ),
                InstanceAttribute(
                    instance_id=id,
                    name="placed",
                    kind="datetime",
                    moment=START + timedelta(seconds=chance.randrange(31_536_000)),
                    created_at=created,
                ),
                InstanceAttribute(
                    instance_id=id,
                    name="vip",
                    kind="bool",
                    number=float(chance.random() < 0.1),
                    created_at=created,
                ),
            ]
            tags.append(InstanceTag(instance_id=id, tag=f"tag-{n % 10}"))
        with transaction.atomic():
            WorkflowInstance.objects.bulk_create(rows)
            InstanceAttribute.objects.bulk_create(attributes)
            InstanceTag.objects.bulk_create(tags)
        done = first + len(rows)
        if done % 100_000 == 0 or done == instances:
            print(f"  {done:>9,} instances ({time.monotonic() - started:.0f} s)", flush=True)


QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("no condition (what a page costs)", {}),
    ('status="completed" (all)', {"status": "completed"}),
    ("amount__gte=99_000 (1 %)", {"attributes": {"amount__gte": 99_000}}),
    ("amount__gte=1000 (99 %)", {"attributes": {"amount__gte": 1000}}),
    ('tier="pro" (20 %)', {"attributes": {"tier": "pro"}}),
    ('tier="pro", amount__gte=1000', {"attributes": {"tier": "pro", "amount__gte": 1000}}),
    ('tier__in=["team", "enterprise"]', {"attributes": {"tier__in": ["team", "enterprise"]}}),
    (
        "amount__gte=50_000, amount__lt=50_100 (0.1 %)",
        {"attributes": {"amount__gte": 50_000, "amount__lt": 50_100}},
    ),
    ("placed__lt=<January 4th> (1 %)", {"attributes": {"placed__lt": START + timedelta(days=3)}}),
    ("vip=True (10 %)", {"attributes": {"vip": True}}),
    ("amount=12_345 (exact)", {"attributes": {"amount": 12_345}}),
    ('tag="tag-3" (10 %)', {"tag": "tag-3"}),
    ('tag="tag-3", amount__gte=99_000', {"tag": "tag-3", "attributes": {"amount__gte": 99_000}}),
]


def measure(runs: int, explain: bool) -> None:
    from django.db.models import Q

    import django_workflows as wf
    from django_workflows.attributes import conditions
    from django_workflows.store import attributes as searchable

    for label, options in QUERIES:
        # The page as store.list_instances() reads it, and its first query.
        filters = {
            "tag": options.get("tag"),
            "conditions": conditions(options.get("attributes", {})),
        }
        where = Q(status=options["status"]) if "status" in options else Q()
        rows = searchable.ordered("default", where, **filters)
        timings, query = [], []
        for _ in range(runs):
            began = time.perf_counter()
            found = wf.list_instances(**options)
            timings.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            searchable.page("default", where, **filters, limit=100, offset=0)
            query.append((time.perf_counter() - began) * 1000)
        print(
            f"{label:<46} {len(found):>3} rows  list_instances() median "
            f"{statistics.median(timings):6.1f} ms (max {max(timings):6.1f})  its page's "
            f"instances alone {statistics.median(query):6.1f} ms",
            flush=True,
        )
        if explain:
            print("    " + rows[:100].explain().replace("\n", "\n    "))


def analyze(db: str) -> None:
    """Fresh statistics for the planner."""
    from django.db import connection

    tables = (
        "django_workflows_workflowinstance, django_workflows_instanceattribute, "
        "django_workflows_instancetag"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE TABLE {tables}" if db == "mysql" else "ANALYZE")
        if db == "mysql":
            cursor.fetchall()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the database a previous run filled"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("BENCH_DB_NAME", "workflows_attributes")
    os.environ.update(DB=args.db, DJANGO_SETTINGS_MODULE=SETTINGS)
    sys.path.insert(0, str(ROOT))

    import django
    from django.conf import settings

    from benchmarks.run import recreate_database

    settings.DATABASES  # noqa: B018 - load the settings before django.setup()
    if not args.reuse:
        recreate_database(args.db)
    django.setup()
    from django.core.management import call_command

    print(f"database: {args.db} {settings.DATABASES['default']['NAME']}")
    if not args.reuse:
        call_command("migrate", verbosity=0)
        print(f"filling {args.instances:,} instances, 4 attributes and 1 tag each")
        fill(args.instances)
        analyze(args.db)
    print(f"list_instances() of a page of 100, {args.runs} runs each:")
    measure(args.runs, args.explain)


if __name__ == "__main__":
    main()
