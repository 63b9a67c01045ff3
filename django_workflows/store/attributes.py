"""Tags and search attributes in their tables: the rows written with an instance's INSERT and
by the lease holder's write (ctx.set_attributes()), read for a page of instances, and the
conditions list_instances() filters by, each an EXISTS on an indexed column.

The values come checked and in their row's form (django_workflows/attributes.py); they are
stored plain, even with a codec.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Exists, OuterRef, Q

from ..attributes import Condition, Stored, to_value
from ..models import InstanceAttribute, InstanceTag
from .backends import backend

_COLUMNS = ["kind", "text", "number", "moment"]


def _row(id: str, name: str, value: Stored) -> InstanceAttribute:
    return InstanceAttribute(
        instance_id=id,
        name=name,
        kind=value.kind,
        text=value.text,
        number=value.number,
        moment=value.moment,
    )


def create(using: str, id: str, tags: list[str], attributes: dict[str, Stored]) -> None:
    """The tags and attributes of instance `id`, just inserted (in its transaction)."""
    if tags:
        InstanceTag.objects.using(using).bulk_create(
            [InstanceTag(instance_id=id, tag=tag) for tag in tags]
        )
    if attributes:
        InstanceAttribute.objects.using(using).bulk_create(
            [_row(id, name, value) for name, value in attributes.items()]
        )


def write(using: str, id: str, changes: dict[str, Stored | None]) -> None:
    """Set (upsert) or, for None, remove attributes of instance `id`, inside the lease
    holder's fenced write."""
    removed = [name for name, value in changes.items() if value is None]
    kept = {name: value for name, value in changes.items() if value is not None}
    if removed:
        InstanceAttribute.objects.using(using).filter(instance_id=id, name__in=removed)._raw_delete(
            using
        )
    if kept:
        InstanceAttribute.objects.using(using).bulk_create(
            [_row(id, name, value) for name, value in kept.items()],
            **backend(using).upsert_kwargs(["instance", "name"], _COLUMNS),
        )


def copy(using: str, source: str, id: str) -> None:
    """Give instance `id` (a fork, just inserted) the tags and attributes instance `source` has."""
    tags = InstanceTag.objects.using(using).filter(instance_id=source).values_list("tag", flat=True)
    rows = InstanceAttribute.objects.using(using).filter(instance_id=source)
    create(
        using,
        id,
        list(tags),
        {
            name: Stored(kind, text, number, moment)
            for name, kind, text, number, moment in rows.values_list("name", *_COLUMNS)
        },
    )


def names(using: str, id: str) -> set[str]:
    """The names of instance `id`'s attributes."""
    rows = InstanceAttribute.objects.using(using).filter(instance_id=id)
    return set(rows.values_list("name", flat=True))


def load(using: str, ids: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """The tags (sorted) and the attributes (by name, in their Python types) of the instances
    `ids`: one query per table, none for no ids."""
    ids = list(ids)
    tags: dict[str, list[str]] = {}
    attributes: dict[str, dict[str, Any]] = {}
    if not ids:
        return tags, attributes
    tag_rows = InstanceTag.objects.using(using).filter(instance_id__in=ids).order_by("tag")
    for instance_id, tag in tag_rows.values_list("instance_id", "tag"):
        tags.setdefault(instance_id, []).append(tag)
    rows = InstanceAttribute.objects.using(using).filter(instance_id__in=ids).order_by("name")
    for instance_id, name, *cells in rows.values_list("instance_id", "name", *_COLUMNS):
        attributes.setdefault(instance_id, {})[name] = to_value(*cells)
    return tags, attributes


def tagged(tag: str) -> Q:
    """Instances with the tag `tag` (an EXISTS on the (tag, instance) index)."""
    return Q(Exists(InstanceTag.objects.filter(instance_id=OuterRef("pk"), tag=tag)))


def matching(conditions: list[Condition]) -> list[Q]:
    """Instances whose attributes meet every one of `conditions`: one EXISTS per attribute
    name on its (name, <column>) index, the conditions on one name in one EXISTS (an instance
    has one row a name, so they hold on that row together: `amount__gte` with `amount__lt` is
    one range of the index); `isnull` an EXISTS (or NOT EXISTS) of its own."""
    found: list[Q] = []
    by_name: dict[str, Q] = {}
    for condition in conditions:
        if condition.lookup == "isnull":
            has = Exists(_rows(condition.name))
            found.append(~Q(has) if condition.value else Q(has))
            continue
        where = Q(**{f"{condition.column}__{condition.lookup}": condition.value})
        if len(condition.kinds) == 1:
            where &= Q(kind=condition.kinds[0])
        elif condition.kinds:
            where &= Q(kind__in=condition.kinds)
        by_name[condition.name] = by_name.get(condition.name, Q()) & where
    found += [Q(Exists(_rows(name).filter(where))) for name, where in by_name.items()]
    return found


def _rows(name: str) -> Any:
    return InstanceAttribute.objects.filter(instance_id=OuterRef("pk"), name=name)
