"""Tags and search attributes in their tables: the rows written with an instance's INSERT and
by the lease holder's write (ctx.set_attributes()), read for a page of instances, and the
conditions list_instances() filters by, on indexed columns.

The values come checked and in their row's form (django_workflows/attributes.py); they are
stored plain, even with a codec.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q

from ..attributes import Condition, Stored, to_value
from ..models import InstanceAttribute, InstanceTag, WorkflowInstance
from .backends.base import ATTRIBUTE_COLUMNS, attribute_row


def create(
    using: str, id: str, tags: list[str], attributes: dict[str, Stored], created_at: datetime
) -> None:
    """The tags and attributes of instance `id`, just inserted (in its transaction), created
    at `created_at` (each attribute row keeps a copy: see matching())."""
    if tags:
        InstanceTag.objects.using(using).bulk_create(
            [InstanceTag(instance_id=id, tag=tag) for tag in tags]
        )
    if attributes:
        InstanceAttribute.objects.using(using).bulk_create(
            [attribute_row(id, name, value, created_at) for name, value in attributes.items()]
        )


def copy(using: str, source: str, id: str, created_at: datetime) -> None:
    """Give instance `id` (a fork, just inserted, created at `created_at`) the tags and
    attributes instance `source` has."""
    tags = InstanceTag.objects.using(using).filter(instance_id=source).values_list("tag", flat=True)
    rows = InstanceAttribute.objects.using(using).filter(instance_id=source)
    create(
        using,
        id,
        list(tags),
        {
            name: Stored(kind, text, number, moment)
            for name, kind, text, number, moment in rows.values_list("name", *ATTRIBUTE_COLUMNS)
        },
        created_at,
    )


def names(using: str, id: str) -> set[str]:
    """The names of instance `id`'s attributes."""
    rows = InstanceAttribute.objects.using(using).filter(instance_id=id)
    return set(rows.values_list("name", flat=True))


def load(
    using: str, *, tags: Iterable[str] = (), attributes: Iterable[str] = ()
) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """The tags (sorted) of the instances `tags` and the attributes (by name, in their Python
    types) of the instances `attributes`: one query per table, none for no ids (a reader
    passes the ids that hold rows there, store.instances.holding())."""
    tags, attributes = list(tags), list(attributes)
    found_tags: dict[str, list[str]] = {}
    found_attributes: dict[str, dict[str, Any]] = {}
    if tags:
        rows = InstanceTag.objects.using(using).filter(instance_id__in=tags).order_by("tag")
        for instance_id, tag in rows.values_list("instance_id", "tag"):
            found_tags.setdefault(instance_id, []).append(tag)
    if attributes:
        cells = InstanceAttribute.objects.using(using).filter(instance_id__in=attributes)
        for instance_id, name, *values in cells.order_by("name").values_list(
            "instance_id", "name", *ATTRIBUTE_COLUMNS
        ):
            found_attributes.setdefault(instance_id, {})[name] = to_value(*values)
    return found_tags, found_attributes


def tagged(tag: str, outer: str = "pk") -> Q:
    """Instances with the tag `tag` (an EXISTS on the (tag, instance) index); `outer`: the
    outer query's field holding the instance id."""
    return Q(Exists(InstanceTag.objects.filter(instance_id=OuterRef(outer), tag=tag)))


def page(
    using: str,
    where: Q,
    *,
    tag: str | None,
    conditions: list[Condition],
    limit: int,
    offset: int,
) -> list[WorkflowInstance]:
    """A page of the instances meeting `where` (a condition on their fields), with the tag
    `tag` and attributes meeting every one of `conditions`, in the instance list's order
    (created_at, id).

    The conditions on one name hold on its one row together (`amount__gte` with `amount__lt`
    is one range of an index). Without conditions on values, one query of the instances.
    With them, the page's ids come first from the rows of the first name with such
    conditions, ordered by their copy of the instance's created_at: the database reads them
    either from the (name, created_at, instance) index, stopping after the page (a common
    value), or from the value's (name, <column>) range and sorts the matches (a rarer one),
    both index-only on PostgreSQL, and joins the instances only where `where` needs them;
    then the page's instances by primary key. Each other name is an EXISTS on its index;
    `isnull` an EXISTS (or NOT EXISTS) of its own.
    """
    rows = ordered(using, where, tag=tag, conditions=conditions)[offset : offset + limit]
    if rows.model is WorkflowInstance:
        return list(rows)
    ids = list(rows)
    found = WorkflowInstance.objects.using(using).in_bulk(ids)
    return [found[id] for id in ids if id in found]  # one deleted since: not on the page


def ordered(using: str, where: Q, *, tag: str | None, conditions: list[Condition]) -> Any:
    """page()'s query, not yet sliced: the instances in order, or, with conditions on values,
    their ids in order."""
    by_name: dict[str, Q] = {}
    isnull: list[Condition] = []
    for condition in conditions:
        if condition.lookup == "isnull":
            isnull.append(condition)
            continue
        value = Q(**{f"{condition.column}__{condition.lookup}": condition.value})
        if len(condition.kinds) == 1:
            value &= Q(kind=condition.kinds[0])
        elif condition.kinds:
            value &= Q(kind__in=condition.kinds)
        by_name[condition.name] = by_name.get(condition.name, Q()) & value
    if not by_name:
        rows = WorkflowInstance.objects.using(using).filter(where, *_exists(tag, isnull, {}, "pk"))
        return rows.order_by("created_at", "id")
    (first, value), *others = by_name.items()
    driving = InstanceAttribute.objects.using(using).filter(Q(name=first) & value)
    if where:
        driving = driving.filter(_prefixed(where, "instance__"))
    driving = driving.filter(*_exists(tag, isnull, dict(others), "instance_id"))
    return driving.order_by("created_at", "instance_id").values_list("instance_id", flat=True)


def _exists(tag: str | None, isnull: list[Condition], values: dict[str, Q], outer: str) -> list[Q]:
    """The EXISTS conditions of a page: the tag, each `isnull`, each name's value conditions;
    `outer`: the outer query's field holding the instance id."""
    found = [] if tag is None else [tagged(tag, outer)]
    for condition in isnull:
        has = Exists(_rows(condition.name, outer))
        found.append(~Q(has) if condition.value else Q(has))
    found += [Q(Exists(_rows(name, outer).filter(value))) for name, value in values.items()]
    return found


def _prefixed(where: Q, prefix: str) -> Q:
    """`where`, a condition on one model's fields, as one on a related model's `prefix`."""
    children: list[Any] = []
    for child in where.children:
        if isinstance(child, Q):
            children.append(_prefixed(child, prefix))
        else:
            field, value = child  # type: ignore[misc]
            children.append((f"{prefix}{field}", value))
    return Q(*children, _connector=where.connector, _negated=where.negated)


def _rows(name: str, outer: str) -> Any:
    return InstanceAttribute.objects.filter(instance_id=OuterRef(outer), name=name)
