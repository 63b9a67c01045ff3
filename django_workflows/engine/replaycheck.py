"""The replay check (`manage.py checkworkflows --replay`, `testing.replay()`): stored journals
replayed against the registered code, without a side effect and without a write
(engine/dryrun.py), to find the instances a deploy would break."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .. import clock
from ..conf import database_alias
from ..definitions import Workflow
from ..errors import WorkflowError, WorkflowNonDeterminismError, WorkflowNotFoundError
from ..models import WorkflowInstance
from ..store.journals import InstanceJournal, read_journal, read_journals
from ..store.tables import pending_migrations
from .dryrun import compensations_to_run, dry_replay
from .registry import registry

BATCH_SIZE = 200
"""Instances (with their journals) read at a time."""


class NotMigrated(Exception):  # noqa: N818 - says what the database is
    """The django_workflows migrations are not all applied to the database to read."""


@dataclass(frozen=True)
class Checked:
    """One instance the check replayed: `problem` says why its code does not match its journal,
    None when it does."""

    id: str
    workflow: str
    version: int
    problem: str | None

    def line(self) -> str:
        """`<id> <workflow>@<version>: <problem>`, as checkworkflows prints it."""
        return f"{self.id} {self.workflow}@{self.version}: {self.problem}"


def not_registered(instance: WorkflowInstance) -> str:
    """Why an instance whose workflow@version this deployment lacks is reported."""
    return (
        f"{instance.workflow}@{instance.version} is not registered in this deployment: no "
        f"worker would run the instance, which would stay {instance.status}. Keep that version's "
        f"definition registered until its instances finish."
    )


def replay_journal(
    instance: WorkflowInstance,
    journal: list[tuple[str, dict[str, Any]]],
    definition: Workflow | None = None,
    *,
    using: str | None = None,
) -> WorkflowNonDeterminismError | None:
    """The dry replay of `journal` (decoded, in first-write order) through `definition`, by
    default the registered code of the instance's workflow@version: None when the code reaches
    it in order, else the first mismatch. Raises WorkflowNotFoundError when no definition is
    given and that version is not registered."""
    if definition is None:
        definition = registry.get(instance.workflow, instance.version)
        if definition is None:
            raise WorkflowNotFoundError(not_registered(instance))
    return dry_replay(instance, definition, journal, using=database_alias(using))


def check_tables(using: str) -> None:
    """Raise NotMigrated, naming the database and what to run, when the django_workflows
    migrations are not all applied there (the tables to read may be missing)."""
    pending = pending_migrations(using)
    if pending:
        raise NotMigrated(
            f"The django_workflows tables on database {using!r} are missing or behind this "
            f"code: {len(pending)} migration(s) not applied ({', '.join(pending)}). Run "
            f"`manage.py migrate django_workflows --database {using}` first (in CI, after "
            f"restoring the dump)."
        )


def check_instances(
    *,
    workflow: str | None = None,
    include_finished: int | None = None,
    limit: int | None = None,
    using: str | None = None,
    batch_size: int = BATCH_SIZE,
) -> Iterator[Checked]:
    """Replay every unfinished instance (pending, running, suspended, compensating), and with
    `include_finished` those finished in the last that many days, of `workflow` if given, at
    most `limit`, in id order: one Checked each, read and replayed `batch_size` at a time.

    Raises TypeError or ValueError for a bad argument, WorkflowNotFoundError for a `workflow`
    this deployment does not register, NotMigrated when the tables are not migrated: at the
    call, before anything is read."""
    if workflow is not None:
        if not isinstance(workflow, str) or not workflow:
            raise TypeError(f"workflow must be a workflow's name, not {workflow!r}.")
        registry.resolve(workflow)  # WorkflowNotFoundError naming the registered ones
    since = None
    if include_finished is not None:
        if not isinstance(include_finished, int) or isinstance(include_finished, bool):
            raise TypeError(f"include_finished must be a number of days, not {include_finished!r}.")
        if include_finished < 0:
            raise ValueError(f"include_finished must be 0 days or more, not {include_finished}.")
        since = clock.now() - timedelta(days=include_finished)
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError(f"limit must be a whole number, not {limit!r}.")
        if limit < 1:
            raise ValueError(f"limit must be 1 or more, not {limit}.")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be 1 or more, not {batch_size!r}.")
    using = database_alias(using)
    check_tables(using)
    return _replayed(
        read_journals(
            using, finished_since=since, workflow=workflow, limit=limit, batch_size=batch_size
        ),
        using,
    )


def _replayed(found: Iterator[InstanceJournal], using: str) -> Iterator[Checked]:
    for stored in found:
        instance = stored.instance
        problem: str | None
        if stored.malformed is not None:
            problem = stored.malformed
        elif stored.unreadable is not None:
            problem = f"its payloads cannot be read with the configured CODEC: {stored.unreadable}"
        elif registry.get(instance.workflow, instance.version) is None:
            problem = not_registered(instance)
        else:
            mismatch = replay_journal(instance, stored.journal, using=using)
            problem = None if mismatch is None else str(mismatch)
        yield Checked(instance.pk, instance.workflow, instance.version, problem)


def pending_compensations(id: str, *, using: str | None = None) -> list[str]:
    """The steps whose compensations a cancel of instance `id` would run now, in the order it
    would run them (engine/dryrun.py's compensations_to_run()).

    Raises WorkflowNotFoundError when there is no such instance or its workflow@version is not
    registered, WorkflowNonDeterminismError when the code does not match its journal, and
    WorkflowError when its journal cannot be read (a codec without its key, a malformed row)."""
    using = database_alias(using)
    stored = read_journal(using, id)
    if stored is None:
        raise WorkflowNotFoundError(f"No workflow instance {id!r}.")
    if stored.unreadable is not None:
        raise WorkflowError(
            f"its journal cannot be read with the CODEC setting: {stored.unreadable}"
        )
    if stored.malformed is not None:
        raise WorkflowError(stored.malformed)
    instance = stored.instance
    definition = registry.get(instance.workflow, instance.version)
    if definition is None:
        raise WorkflowNotFoundError(not_registered(instance))
    return compensations_to_run(instance, definition, stored.journal, using=using)
