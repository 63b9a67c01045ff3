"""An execution's journal (`x.journal`): each ctx call's position, the entry it replays, the
check that the code still matches the journal, and the entries buffered for the next write."""

from __future__ import annotations

from typing import Any

from .. import errors
from ..conf import get_settings
from ..jsonvalues import check_text, size
from ..models import JOURNAL_NAME_LENGTH
from . import journal
from .guards import Guards
from .interrupts import JournalFull


def sibling(recorded: list[int] | None, position: tuple[int, ...]) -> bool:
    """Whether an entry recorded at `recorded` lies in another branch of a gather that
    `position` is in: its order relative to `position` is not fixed."""
    if not recorded:
        return False
    for index, (a, b) in enumerate(zip(recorded, position, strict=False)):
        if a != b:
            return index % 2 == 1  # odd places of a position are gather branch numbers
    return False


class Replay:
    """The journal of one execution: read at the claim, replayed by ctx calls, added to."""

    def __init__(self, guards: Guards, journal_entries: list[tuple[str, dict[str, Any]]]):
        self.guards = guards
        self.instance = guards.instance
        self.lock = guards.lock
        self.local = guards.local
        # The entries by name, in first-write order.
        self.entries: dict[str, dict[str, Any]] = dict(journal_entries)
        self.pending: dict[str, dict[str, Any]] = {}
        self.reached: set[str] = set()
        self.consumed: set[int] = {
            doc["result"]["signal_id"]
            for doc in self.entries.values()
            if doc.get("kind") in ("wait", "child")
            and isinstance(doc.get("result"), dict)
            and doc["result"].get("signal_id") is not None
        }
        # Taken by the runs before a ctx.continue_as_new() (continuation.py).
        self.consumed.update(self.entries.get(journal.CONTINUED, {}).get("consumed", ()))
        self.replay_only = False
        # Each entry's size as JSON, measured only when the journal's limits are checked (before
        # a new entry): a step's running entry, replaced by its end before the next check, is
        # never measured. `_unsized`: the entries changed since.
        self._sizes: dict[str, int] = {}
        self._unsized: set[str] = set(self.entries)
        self._journal_bytes = 0
        self.warn_journal = False
        self.counters: dict[tuple[int, ...], int] = {}
        self._children: dict[str, int] = {}  # children started in this run, per workflow

    def path(self) -> tuple[int, ...]:
        return getattr(self.local, "path", ())

    def next_position(self) -> tuple[int, ...]:
        with self.lock:
            path = self.path()
            count = self.counters.get(path, 0)
            self.counters[path] = count + 1
            return (*path, count)

    def next_child_number(self, workflow: str) -> int:
        """1 for the first child of `workflow` this run starts, 2 for the next..."""
        with self.lock:
            self._children[workflow] = self._children.get(workflow, 0) + 1
            return self._children[workflow]

    def enter(self, name: str, kind: str) -> tuple[tuple[int, ...], dict[str, Any] | None]:
        """Reach the operation `name`: its position, and its journal entry if it has one."""
        self.guards.guard_step(f'ctx ({kind} "{name}")')
        if len(name) > JOURNAL_NAME_LENGTH:
            raise ValueError(
                f'The {kind} name "{name[:40]}..." is {len(name)} characters long; the most it '
                f"can be is {JOURNAL_NAME_LENGTH}."
            )
        check_text(f"The {kind} name {name[:40]!r}", name)
        with self.lock:
            if name in self.reached:
                raise self.guards.define_error(
                    errors.WorkflowDefinitionError(
                        f'The name "{name}" is used twice in one run of workflow '
                        f'"{self.instance.workflow}@{self.instance.version}" (instance '
                        f"{self.instance.id!r}). Step, sleep and wait names must be unique within a "
                        f"run: in a loop, add the index to the name."
                    )
                )
            self.reached.add(name)
            position = self.next_position()
            entry = self.entries.get(name)
        if entry is not None and entry.get("kind") != kind:
            raise self.guards.define_error(
                errors.WorkflowNonDeterminismError(
                    f'Instance "{self.instance.id}" of workflow "{self.instance.workflow}@'
                    f'{self.instance.version}" does not match its journal: "{name}" was recorded as a '
                    f"{entry.get('kind')} and is now reached as a {kind}."
                )
            )
        return position, entry

    def check_replay(self, name: str, position: tuple[int, ...]) -> None:
        """Before a new step runs: the code must have reached every entry of the journal."""
        with self.lock:
            unreached = [
                recorded
                for recorded, doc in self.entries.items()
                if recorded not in self.reached
                and doc.get("kind") not in journal.ENGINE_KINDS
                and not sibling(doc.get("pos"), position)
            ]
        if unreached:
            names = ", ".join(f'"{n}"' for n in unreached)
            raise self.guards.define_error(
                errors.WorkflowNonDeterminismError(
                    f'Instance "{self.instance.id}" of workflow "{self.instance.workflow}@'
                    f'{self.instance.version}" does not match its journal: {names} '
                    f"{'was' if len(unreached) == 1 else 'were'} recorded by an earlier run but not "
                    f'reached before the new step "{name}". A deployed change renamed, removed or '
                    f"reordered steps. Ship such changes as a new version (@workflow(name, "
                    f"version=...)) and keep the old definition registered until its instances finish."
                )
            )

    def record(self, name: str, position: tuple[int, ...] | None, /, **doc: Any) -> dict[str, Any]:
        """Buffer a journal entry; it is written with the next write."""
        if position is not None:
            doc["pos"] = list(position)
        with self.lock:
            if name not in self.entries:
                self.check_journal_limits(doc.get("kind"))
            self.keep(name, doc)
            self.pending[name] = doc
        return doc

    def untouched(self) -> bool:
        """Whether no execution has journaled anything: the journal holds at most the headers
        start() stored, and nothing is buffered. Then every claim of the instance but the
        current one was an execution that stopped before its first write (lease.py)."""
        with self.lock:
            return all(doc.get("kind") == journal.HEADERS for doc in self.entries.values())

    def keep(self, name: str, doc: dict[str, Any]) -> None:
        """Hold `doc` as the entry `name` (the caller holds the lock); journal_bytes() counts
        its bytes."""
        self.entries[name] = doc
        self._unsized.add(name)

    def journal_bytes(self) -> int:
        """The journal's size as JSON: its entries' bytes of UTF-8."""
        with self.lock:
            for name in self._unsized:
                new = size(self.entries[name])
                self._journal_bytes += new - self._sizes.get(name, 0)
                self._sizes[name] = new
            self._unsized.clear()
            return self._journal_bytes

    def check_journal_limits(self, kind: str | None) -> None:
        """Raise JournalFull before a new entry past JOURNAL's limits (a compensation's entry
        is never refused), and send `journal-large` once past its warning marks."""
        limits = get_settings().journal
        entries, used = len(self.entries), self.journal_bytes()
        if kind != "compensation" and (entries >= limits.max_entries or used >= limits.max_bytes):
            raise self.guards.interrupted(JournalFull())
        if not self.instance.journal_warned and (
            entries + 1 >= limits.warn_entries or used >= limits.warn_bytes
        ):
            self.instance.journal_warned = True
            self.warn_journal = True
            self.guards.emit("journal-large", entries=entries + 1, bytes=used)
