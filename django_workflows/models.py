"""The workflow state, in the application's own database. Read it freely; write it only via the store."""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models

from .attributes import ATTRIBUTE_NAME_LENGTH, ATTRIBUTE_TEXT_LENGTH, TAG_LENGTH
from .definitions import DEFAULT_QUEUE, QUEUE_LENGTH, SCHEDULE_ID_LENGTH
from .indexes import CoveringIndex, DueIndex, LiveKeyIndex, ParkedIndex, SetIndex
from .jsonvalues import Utf8Encoder
from .store.backends.collations import exact_collation
from .subjects import subject_filter


class Status(models.TextChoices):
    """What an instance is doing."""

    PENDING = "pending"
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPENSATING = "compensating"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    COMPENSATION_FAILED = "compensation_failed"


UNFINISHED = (Status.PENDING, Status.RUNNING, Status.SUSPENDED, Status.COMPENSATING)
FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED, Status.COMPENSATION_FAILED)

# Column lengths, in characters. On MySQL/MariaDB every key is an indexed utf8mb4 column and
# InnoDB caps an index key at 3,072 bytes: a journal entry's (instance id, name) takes 255 + 512.
KEY_LENGTH = 255
JOURNAL_NAME_LENGTH = 512


class KeyField(models.CharField):
    """An id, name or key: compared exactly, also on MySQL and MariaDB, whose default
    collations ignore case, and whose `utf8mb4_bin` ignores trailing spaces (see
    store/backends/collations.py)."""

    exact_key = True  # what mysql_collations.key_columns looks for

    def db_parameters(self, connection: Any) -> dict[str, Any]:
        parameters = super().db_parameters(connection)
        collation = exact_collation(connection)
        if collation is not None:
            parameters["collation"] = collation
        return parameters


class JSONField(models.JSONField):  # type: ignore[type-arg]
    """A JSON column whose text keeps non-ASCII characters as they are, in UTF-8
    (jsonvalues.Utf8Encoder): Django's own JSONField writes them escaped ("\\u00e9", six bytes
    for the two of "é"), which MySQL's and MariaDB's text columns and SQLite's keep as written
    (PostgreSQL's jsonb keeps the same either way). Old rows, escaped, read the same.

    The column is Django's JSONField's: the migrations name that field (deconstruct()), so that
    none is needed, and a migration's historical models write as Django does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.encoder is None:
            self.encoder = Utf8Encoder

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        if kwargs.get("encoder") is Utf8Encoder:
            del kwargs["encoder"]
        return name, "django.db.models.JSONField", args, kwargs


class WorkflowInstanceQuerySet(models.QuerySet["WorkflowInstance"]):
    """WorkflowInstance.objects: the ORM's queries, and the instances about one subject."""

    def for_subject(self, subject: Any) -> WorkflowInstanceQuerySet:
        """The instances started with `subject=subject` (by the subject index). Raises
        TypeError or ValueError for anything but a saved model instance."""
        return self.filter(subject_filter(subject, self.db))


class WorkflowInstance(models.Model):
    """One run of a workflow: its input, status, outcome, when it is next due, and its lease."""

    id = KeyField(primary_key=True, max_length=KEY_LENGTH)
    workflow = KeyField(max_length=KEY_LENGTH)
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.PENDING)
    input = JSONField(null=True, blank=True)
    output = JSONField(null=True, blank=True)
    error = JSONField(null=True, blank=True)
    custom_status = JSONField(null=True, blank=True)
    # When a worker should next run it; NULL once it is finished or parked with nothing to wake it
    # but a signal or a cancel. The claim index only holds rows with a wake time.
    wake_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    priority = models.PositiveIntegerField(default=0)
    # The queue it waits in (@workflow(queue=...), start(queue=...)): a worker started with
    # --queue claims only its queues' instances.
    queue = KeyField(max_length=QUEUE_LENGTH, default=DEFAULT_QUEUE)
    parent_id = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    parent_close = models.CharField(max_length=16, null=True, blank=True)
    schedule_id = KeyField(max_length=SCHEDULE_ID_LENGTH, null=True, blank=True)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    concurrency_key = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    rate_limit_key = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    # The key it shares the workers with (@workflow(fair_key=...), start(fair_key=...)): a
    # start with one is due at its key's turn (store/fairness.py).
    fair_key = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    runs = models.PositiveIntegerField(default=0)
    # Signals with an id above this one were sent after the instance started: it may take them.
    signal_cursor = models.BigIntegerField(default=0)
    lease_token = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    lease_owner = models.CharField(max_length=KEY_LENGTH, null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    terminate_requested = models.BooleanField(default=False)
    cancel_reason = models.TextField(null=True, blank=True)
    journal_warned = models.BooleanField(default=False)
    # Some result() waits for it: on PostgreSQL its end is then NOTIFYed (each NOTIFY costs every
    # listening connection a transaction, so ends nobody waits for are not announced).
    awaited = models.BooleanField(default=False)
    # start() stored STEP_MIDDLEWARE headers with it (the journal entry `$headers`): only then
    # does the claim read a first execution's journal for process_execution().
    has_headers = models.BooleanField(default=False)
    # Due, but its concurrency key had every slot taken when a claim passed over it: out of the
    # claim index's range until a lease of that key ends (store/parking.py).
    parked = models.BooleanField(default=False)
    # How often the instance continued as new (ctx.continue_as_new()): 0 for its first run.
    generation = models.PositiveIntegerField(default=0)
    # The instance this one was forked from (django_workflows.fork()), for its admin link.
    forked_from = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    # The model instance it is about (start(subject=...)): its content type and primary key as
    # text. Deleting that row leaves the instance alone: no database constraint ties them.
    # Indexed by dw_instance_subject (its first column), not by an index of its own.
    subject_type = models.ForeignKey(
        ContentType,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    subject_id = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    subject = GenericForeignKey("subject_type", "subject_id")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    objects = WorkflowInstanceQuerySet.as_manager()

    class Meta:
        verbose_name = "workflow instance"
        ordering = ["created_at", "id"]
        indexes = [
            # Claims: due instances by priority, then the most overdue. Partial where the
            # database has partial indexes, so finished and leased instances never slow a claim
            # down; elsewhere lease_until after the priority keeps the leased ones out of the
            # claim's range (a claim reads lease_until IS NULL, then the lapsed leases). The id
            # last, as the claim's order has it: with the whole order in the index, the claim
            # reads its first rows in index order whatever the planner's statistics say (with
            # created_at last, PostgreSQL read and sorted every due row while its statistics
            # said there were few, as after a burst of starts).
            DueIndex(
                fields=["priority", "lease_until", "wake_at", "created_at", "id"],
                name="dw_instance_due",
                lease="free",
                unparked="predicate",
            ),
            # Claims of a worker started with --queue: the same order within one queue (a claim
            # from several queues reads one range per queue and merges them). The parked are a
            # column here, not out of it: the admin's list of queues reads its first column.
            DueIndex(
                fields=["queue", "priority", "lease_until", "wake_at", "created_at", "id"],
                name="dw_instance_queue_due",
                lease="free",
                unparked="column",
            ),
            # The leased instances with a wake time, by lease end: the claims' lapsed leases
            # (a plain index on lease_until on MySQL and MariaDB, where nothing reads it).
            DueIndex(fields=["lease_until"], name="dw_instance_leased", lease="held"),
            # Claims under a key's limit: the live leases of a candidate's key.
            LiveKeyIndex(
                fields=["workflow", "concurrency_key", "lease_until"], name="dw_instance_live_key"
            ),
            # What a lease's end puts back: the parked instances of its key.
            ParkedIndex(
                fields=["workflow", "concurrency_key", "parked"], name="dw_instance_parked"
            ),
            models.Index(fields=["status", "updated_at"], name="dw_instance_status"),
            models.Index(fields=["workflow", "version", "status"], name="dw_instance_workflow"),
            # Children, a schedule's instances, a model's instances: most instances have none
            # of the three, and are left out of these indexes where that can be done.
            SetIndex(fields=["parent_id"], name="dw_instance_parent"),
            SetIndex(fields=["schedule_id"], name="dw_instance_schedule"),
            models.Index(fields=["created_at"], name="dw_instance_created"),
            SetIndex(fields=["subject_type", "subject_id"], name="dw_instance_subject"),
            # An instance's forks (its admin page lists them): most instances have none.
            SetIndex(fields=["forked_from"], name="dw_instance_forked_from"),
            # A keyed start's turn: its key's latest instance that never ran (runs = 0), by
            # wake time; also the admin's filter by key. Keyless instances have no entry.
            SetIndex(fields=["fair_key", "runs", "wake_at"], name="dw_instance_fair"),
        ]
        permissions = [
            ("cancel_workflowinstance", "Can cancel workflow instances"),
            ("terminate_workflowinstance", "Can terminate workflow instances"),
            ("retry_workflowinstance", "Can retry workflow instances"),
            ("resume_workflowinstance", "Can resume workflow instances at a breakpoint"),
            ("fork_workflowinstance", "Can rerun workflow instances from a step"),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.workflow}@{self.version}, {self.status})"


class JournalEntry(models.Model):
    """One journaled step, sleep, wait, commit, value or compensation: one JSON document each."""

    id = models.BigAutoField(primary_key=True)  # first-write order
    # No index of its own: dw_journal_unique_name starts with it.
    instance = models.ForeignKey(
        WorkflowInstance, on_delete=models.CASCADE, related_name="entries", db_index=False
    )
    name = KeyField(max_length=JOURNAL_NAME_LENGTH)
    document = JSONField()

    class Meta:
        verbose_name = "journal entry"
        verbose_name_plural = "journal entries"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "name"], name="dw_journal_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class InstanceTag(models.Model):
    """A tag of an instance (start(tags=...), @workflow(tags=...)): one row a tag, to search by."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: dw_tag_unique starts with it.
    instance = models.ForeignKey(
        WorkflowInstance, on_delete=models.CASCADE, related_name="tags", db_index=False
    )
    tag = KeyField(max_length=TAG_LENGTH)

    class Meta:
        verbose_name = "instance tag"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "tag"], name="dw_tag_unique"),
        ]
        indexes = [models.Index(fields=["tag", "instance"], name="dw_tag_lookup")]

    def __str__(self) -> str:
        return self.tag


_BY_VALUE = ("kind", "created_at", "instance")


class InstanceAttribute(models.Model):
    """A search attribute of an instance (start(attributes=...), ctx.set_attributes()), stored
    plain, even with a codec, in the column of its type, so that lookups on it use an index."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: dw_attribute_unique starts with it.
    instance = models.ForeignKey(
        WorkflowInstance, on_delete=models.CASCADE, related_name="attributes", db_index=False
    )
    name = KeyField(max_length=ATTRIBUTE_NAME_LENGTH)
    kind = models.CharField(max_length=8)  # "str", "int", "float", "bool" or "datetime"
    text = KeyField(max_length=ATTRIBUTE_TEXT_LENGTH, null=True, blank=True)
    number = models.FloatField(null=True, blank=True)  # int, float, and bool as 0 or 1
    moment = models.DateTimeField(null=True, blank=True)
    # The instance's created_at, copied, so that the instances with an attribute are read from
    # one index in the instance list's order (created_at, id): a page of a common value is the
    # first rows of that index, not a sort of every match.
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "instance attribute"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "name"], name="dw_attribute_unique"),
        ]
        # A page of instances filtered by an attribute is read either from the value's range
        # (a rare value: sort the few matches by created_at) or in created_at order (a common
        # one: the first matches fill the page); on PostgreSQL either scan is index-only.
        indexes = [
            CoveringIndex(fields=["name", "text"], name="dw_attribute_text", covering=_BY_VALUE),
            CoveringIndex(
                fields=["name", "number"], name="dw_attribute_number", covering=_BY_VALUE
            ),
            CoveringIndex(
                fields=["name", "moment"], name="dw_attribute_moment", covering=_BY_VALUE
            ),
            CoveringIndex(
                fields=["name", "created_at", "instance"],
                name="dw_attribute_order",
                covering=("kind", "text", "number", "moment"),
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Wait(models.Model):
    """A signal a suspended instance waits for (name and exact key)."""

    id = models.BigAutoField(primary_key=True)
    instance = models.ForeignKey(WorkflowInstance, on_delete=models.CASCADE, related_name="waits")
    signal = KeyField(max_length=KEY_LENGTH)
    key = KeyField(max_length=KEY_LENGTH, null=True, blank=True)

    class Meta:
        verbose_name = "wait"
        ordering = ["id"]
        indexes = [models.Index(fields=["signal", "key"], name="dw_wait_signal")]

    def __str__(self) -> str:
        return f"{self.signal} [{self.key}]"


class Signal(models.Model):
    """A signal sent with signal(): durable until purged; ids become visible in id order."""

    id = models.BigAutoField(primary_key=True)
    name = KeyField(max_length=KEY_LENGTH)
    key = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    dedupe_id = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    payload = JSONField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "signal"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["name", "dedupe_id"], name="dw_signal_dedupe"),
        ]
        indexes = [
            models.Index(fields=["name", "key", "id"], name="dw_signal_lookup"),
            models.Index(fields=["created_at"], name="dw_signal_created"),
        ]

    def __str__(self) -> str:
        return f"#{self.id} {self.name} [{self.key}]"


STREAM_NAME_LENGTH = KEY_LENGTH


class WorkflowStream(models.Model):
    """A stream of an instance (ctx.stream(), step.stream()): its name, how many items and bytes
    of JSON it holds, and whether it was closed. Its row is locked by every append, which takes
    the next offsets under it."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: dw_stream_unique starts with it.
    instance = models.ForeignKey(
        WorkflowInstance, on_delete=models.CASCADE, related_name="streams", db_index=False
    )
    name = KeyField(max_length=STREAM_NAME_LENGTH)
    items = models.PositiveIntegerField(default=0)
    bytes = models.PositiveBigIntegerField(default=0)
    closed = models.BooleanField(default=False)
    updated_at = models.DateTimeField()

    class Meta:
        verbose_name = "workflow stream"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "name"], name="dw_stream_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class WorkflowStreamItem(models.Model):
    """One item of a stream: its offset (1, 2, ... per instance and name), its value (JSON,
    encoded by the codec), the attempt of the step that wrote it (None for ctx.stream())."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: dw_stream_item_unique starts with it.
    instance = models.ForeignKey(
        WorkflowInstance, on_delete=models.CASCADE, related_name="stream_items", db_index=False
    )
    name = KeyField(max_length=STREAM_NAME_LENGTH)
    offset = models.PositiveIntegerField()
    value = JSONField(null=True, blank=True)
    attempt = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "workflow stream item"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "name", "offset"], name="dw_stream_item_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.offset}"


class WorkflowSchedule(models.Model):
    """A schedule: declared in code or saved with schedules.upsert(); its spec, state and lease."""

    id = KeyField(primary_key=True, max_length=SCHEDULE_ID_LENGTH)
    workflow = KeyField(max_length=KEY_LENGTH)
    version = models.PositiveIntegerField(null=True, blank=True)
    declared = models.BooleanField(default=False)
    spec = JSONField()
    input = JSONField(null=True, blank=True)
    paused = models.BooleanField(default=False)
    wake_at = models.DateTimeField(null=True, blank=True)
    state = JSONField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1)
    lease_token = KeyField(max_length=KEY_LENGTH, null=True, blank=True)
    lease_owner = models.CharField(max_length=KEY_LENGTH, null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        verbose_name = "workflow schedule"
        ordering = ["id"]
        indexes = [models.Index(fields=["paused", "wake_at"], name="dw_schedule_due")]
        permissions = [
            ("pause_workflowschedule", "Can pause and resume workflow schedules"),
            ("trigger_workflowschedule", "Can trigger workflow schedules"),
        ]

    def __str__(self) -> str:
        return self.id


class RateLimitWindow(models.Model):
    """A rate-limit window of a workflow (scope "workflow") or of one of its keys (scope "key")."""

    id = models.BigAutoField(primary_key=True)
    workflow = KeyField(max_length=KEY_LENGTH)
    scope = models.CharField(max_length=8)
    key = KeyField(max_length=KEY_LENGTH, default="", blank=True)
    window_end = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "rate-limit window"
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "scope", "key"], name="dw_ratelimit_unique_window"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} {self.scope} {self.key}"


class WorkerProcess(models.Model):
    """A live (or lately gone) worker process: registered when it starts, its `last_seen_at`
    refreshed by its lease renewer, deleted on a clean exit. A row whose `last_seen_at` is three
    heartbeats old (past `gone_at`) is a worker that died; purge() deletes those gone a day."""

    id = KeyField(primary_key=True, max_length=KEY_LENGTH)  # the worker id (lease_owner)
    host = models.CharField(max_length=KEY_LENGTH)
    pid = models.PositiveIntegerField()
    # The queues it claims from; empty for every queue.
    queues = JSONField(default=list, blank=True)
    # The workflows it runs ("name@version") when started with some (--workflow), empty for
    # every one registered in its process.
    workflows = JSONField(default=list, blank=True)
    concurrency = models.PositiveIntegerField()
    version = models.CharField(max_length=32)  # of the django-durable-workflows package
    heartbeat = models.FloatField()  # seconds between two refreshes of last_seen_at
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    # last_seen_at + three heartbeats: past it, the worker is gone (killed, or cut off from the
    # database). Stored, so that "live first", "gone" and purge() are plain indexed comparisons.
    gone_at = models.DateTimeField()
    running = models.PositiveIntegerField(default=0)  # executions in progress at last_seen_at
    executed = models.PositiveBigIntegerField(default=0)  # executions ended since it started

    class Meta:
        verbose_name = "worker process"
        verbose_name_plural = "worker processes"
        ordering = ["-gone_at", "id"]  # the live ones first
        indexes = [
            models.Index(fields=["last_seen_at"], name="dw_worker_seen"),
            models.Index(fields=["gone_at"], name="dw_worker_gone"),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.host}, pid {self.pid})"


class StoreLock(models.Model):
    """Lock rows for databases without advisory locks (MySQL, MariaDB): SELECT ... FOR UPDATE/SHARE."""

    name = KeyField(primary_key=True, max_length=KEY_LENGTH)

    class Meta:
        verbose_name = "store lock"

    def __str__(self) -> str:
        return self.name


class WakeupCounter(models.Model):
    """Wake-up counters for databases without notifications (SQLite, MySQL, MariaDB): a start
    or signal adds one to a shard's count in its own transaction, and an idle worker reads the
    counts every WORKER['WAKEUP_INTERVAL'] to look for work as soon as they change. A row
    exists once its shard was first counted; the counts only ever grow."""

    shard = models.PositiveSmallIntegerField(primary_key=True)
    count = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "wake-up counter"

    def __str__(self) -> str:
        return f"shard {self.shard}: {self.count}"
