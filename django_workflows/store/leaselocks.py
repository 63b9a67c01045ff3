"""The lock by which a renewal that waits for a row lock keeps claims off the instance.

A renewal that finds an instance's row locked by another transaction (an application's
select_for_update(), a cancel() inside an atomic() still open) waits for that lock in a thread
of its own (store.instances.renew_once_unlocked). Once the lock is released it must take the
row before any claim, even when the lease lapsed meanwhile.
"""

from __future__ import annotations

from django.db import connections
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.db.models.lookups import Exact

# pg_advisory_xact_lock keys: (class, hashtext(instance id)), apart from vendor.py's.
PG_LEASE_CLASS = 0x4457574C  # "DWWL"


def await_row_lock(using: str, id: str) -> None:
    """Before a renewal that waits for the lock another transaction holds on instance `id`: for
    the rest of the transaction (of the connection, on MySQL/MariaDB), wait for row locks as
    long as they are held, with no lock wait or statement timeout.

    On PostgreSQL, also take the instance's lease lock (lapsed_lease_free): a transaction that
    updated the row leaves a new row version, which the waiting renewal locks only after it
    wakes up; meanwhile claims pass over the instance all the same. On MySQL and MariaDB the
    waiting lock itself is granted at the commit, before any claim can lock the row."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL lock_timeout = 0")
            cursor.execute("SET LOCAL statement_timeout = 0")
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [PG_LEASE_CLASS, id])
        elif connection.vendor == "mysql":
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1073741824")


def lapsed_lease_free(using: str) -> Q:
    """The condition (with lease_until < now) for a claim to take an instance whose lease has
    lapsed: on PostgreSQL, that no renewal waits for its row (await_row_lock); true elsewhere.
    Evaluated only for lapsed leases, each lock held until the claim commits."""
    from ..models import WorkflowInstance

    connection = connections[using]
    if connection.vendor != "postgresql":
        return Q()
    id = f"{connection.ops.quote_name(WorkflowInstance._meta.db_table)}.id"
    sql = f"pg_try_advisory_xact_lock(%s, hashtext({id}))"
    return Q(Exact(RawSQL(sql, [PG_LEASE_CLASS], output_field=BooleanField()), True))
