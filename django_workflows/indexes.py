"""The app's own index classes: what each database supports of partial and covering indexes,
decided when the migration creates them (models.py declares where they go)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models
from django.db.migrations.operations.base import Operation


class DueIndex(models.Index):
    """The claim index: partial (rows with a wake time only) where the database has partial
    indexes, a plain one on MySQL and MariaDB, without the system check warning about it.

    `lease`: "free" keeps only the rows no lease holds (lease_until NULL), so a claim's range
    never holds the instances that run, and leaves the lease_until column out of the index
    (NULL throughout: SQLite read a claim's order from the index only up to it, and sorted every
    due row for the rest); "held" only the leased ones (a claim reads the lapsed leases from
    it). Where there are no partial indexes it changes nothing: the columns put lease_until in
    the range instead (see Backend.claim_candidates).

    `unparked`: keep the parked instances out of a claim's range too (store/parking.py):
    "predicate" in the partial predicate where there is one, else as a column after the
    priority, where a claim's `parked = 0` keeps the range's order; "column" as that column
    everywhere (the index then still holds the parked, for a loose scan of its first column)."""

    def __init__(
        self, *args: Any, lease: str = "any", unparked: str | None = None, **kwargs: Any
    ) -> None:
        if lease not in ("any", "free", "held"):
            raise ValueError(f"DueIndex lease must be 'any', 'free' or 'held', not {lease!r}")
        if unparked not in (None, "predicate", "column"):
            raise ValueError(
                f"DueIndex unparked must be None, 'predicate' or 'column', not {unparked!r}"
            )
        super().__init__(*args, **kwargs)
        self.lease = lease
        self.unparked = unparked

    def deconstruct(self) -> Any:
        path, args, kwargs = super().deconstruct()
        if self.lease != "any":
            kwargs["lease"] = self.lease
        if self.unparked is not None:
            kwargs["unparked"] = self.unparked
        return path, args, kwargs

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        partial = schema_editor.connection.features.supports_partial_indexes
        index: models.Index = self
        fields = list(self.fields)
        if partial and self.lease == "free" and "lease_until" in fields:
            fields.remove("lease_until")
        if self.unparked == "column" or (self.unparked and not partial):
            priority = fields.index("priority") + 1
            fields = [*fields[:priority], "parked", *fields[priority:]]
        if fields != list(self.fields):
            index = models.Index(fields=fields, name=self.name)
        statement = models.Index.create_sql(index, model, schema_editor, using, **kwargs)
        if partial:
            column = schema_editor.quote_name(model._meta.get_field("wake_at").column)
            condition = f" WHERE {column} IS NOT NULL"
            if self.lease != "any":
                lease = schema_editor.quote_name(model._meta.get_field("lease_until").column)
                condition += f" AND {lease} IS {'' if self.lease == 'free' else 'NOT '}NULL"
            if self.unparked == "predicate":
                parked = schema_editor.quote_name(model._meta.get_field("parked").column)
                condition += f" AND NOT {parked}"
            statement.parts["condition"] = condition  # type: ignore[assignment]
        return statement


class PartialIndex(models.Index):
    """An index of the rows `predicate()` keeps where the database has partial indexes, a plain
    one on MySQL and MariaDB, without the system check warning about `condition` there."""

    def predicate(self, column: Callable[[str], str]) -> str:
        """The SQL of the rows kept; `column(name)` is a field's quoted column."""
        raise NotImplementedError

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        statement = super().create_sql(model, schema_editor, using, **kwargs)
        if schema_editor.connection.features.supports_partial_indexes:

            def column(name: str) -> str:
                return str(schema_editor.quote_name(model._meta.get_field(name).column))

            statement.parts["condition"] = f" WHERE {self.predicate(column)}"  # type: ignore[assignment]
        return statement


class ParkedIndex(PartialIndex):
    """The parked instances by workflow and key (store/parking.py): what a lease's end of that
    key puts back."""

    def predicate(self, column: Callable[[str], str]) -> str:
        return column("parked")


class LiveKeyIndex(PartialIndex):
    """The leased instances with a concurrency key, by workflow and key: a claim under a key's
    limit probes here whether a candidate's key has its slots taken."""

    def predicate(self, column: Callable[[str], str]) -> str:
        return f"{column('concurrency_key')} IS NOT NULL AND {column('lease_until')} IS NOT NULL"


class SetIndex(PartialIndex):
    """The rows whose first field is set (not NULL). For the columns most instances leave NULL
    (their parent, schedule and subject): those instances cost the index no entry, and no
    index write at each update of their row (three or more per workflow), where the database
    has partial indexes. A lookup by value (`parent_id = %s`, `IN (...)`) still reads it."""

    def predicate(self, column: Callable[[str], str]) -> str:
        return f"{column(self.fields[0])} IS NOT NULL"


class CoveringIndex(models.Index):
    """An index that also holds the `covering` fields where the database has covering indexes
    (PostgreSQL's INCLUDE), so that a scan of it needs no table row; a plain index elsewhere,
    without the system check warning about INCLUDE there."""

    def __init__(self, *args: Any, covering: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.covering = tuple(covering)

    def deconstruct(self) -> Any:
        path, args, kwargs = super().deconstruct()
        kwargs["covering"] = self.covering
        return path, args, kwargs

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        statement = super().create_sql(model, schema_editor, using, **kwargs)
        if self.covering and schema_editor.connection.features.supports_covering_indexes:
            quote = schema_editor.quote_name
            columns = ", ".join(quote(model._meta.get_field(f).column) for f in self.covering)
            statement.parts["include"] = f" INCLUDE ({columns})"  # type: ignore[assignment]
        return statement


class DropColumnIndexes(Operation):
    """Drop the indexes the schema editor made for one field on its own, by their names
    (`suffixes`): "" the field's plain index (a foreign key's, where a unique constraint that
    starts with the field serves its lookups; the migration's state then says db_index=False),
    "_like" the pattern-operator index PostgreSQL's schema editor adds next to each index of a
    varchar column, for LIKE lookups the app never makes of its ids and keys. An index the
    database does not have is passed over: MySQL and MariaDB keep the index of a foreign key
    under a name of their own, and have no pattern indexes.

    A DROP INDEX rather than an AlterField: SQLite would copy the whole table for the change
    of db_index. Backwards, the indexes are made again as the schema editor makes them. In the
    migration that creates the table (0001_initial) it keeps them from being made."""

    reversible = True

    def __init__(self, model_name: str, field_name: str, suffixes: tuple[str, ...]) -> None:
        self.model_name = model_name
        self.field_name = field_name
        self.suffixes = tuple(suffixes)

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass  # the state's field options, if any change, are the migration's AlterField

    def describe(self) -> str:
        return f"Drop the indexes of {self.model_name}.{self.field_name} of its own"

    def _indexes(self, schema_editor: Any, model: Any) -> tuple[Any, dict[str, str], set[str]]:
        field = model._meta.get_field(self.field_name)
        table = model._meta.db_table
        names = {
            suffix: schema_editor._create_index_name(table, [field.column], suffix=suffix)
            for suffix in self.suffixes
        }
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            existing = set(connection.introspection.get_constraints(cursor, table))
        return field, names, existing

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        _, names, existing = self._indexes(schema_editor, model)
        for name in names.values():
            if name in existing:
                schema_editor.execute(schema_editor._delete_index_sql(model, name))
        # An index of a table the same migration creates is not made yet: the schema editor
        # makes it once the migration's operations have run. It is not made at all.
        quoted = [schema_editor.quote_name(name) for name in names.values()]
        schema_editor.deferred_sql = [
            statement
            for statement in schema_editor.deferred_sql
            if not any(name in str(statement) for name in quoted)
        ]

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        field, names, existing = self._indexes(schema_editor, model)
        for suffix, name in names.items():
            if name in existing:
                continue
            if suffix == "_like":
                pattern = getattr(schema_editor, "_create_like_index_sql", None)
                statement = pattern(model, field) if pattern is not None else None
            elif schema_editor._field_should_be_indexed(model, field):
                statement = schema_editor._create_index_sql(model, fields=[field])
            else:
                statement = None
            if statement is not None:
                schema_editor.execute(statement)
