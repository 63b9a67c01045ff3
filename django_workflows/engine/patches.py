"""Patches (ctx.patched(), ctx.deprecate_patch()): a change to a workflow's code made in place,
the old branch kept for the instances that had passed the changed code when it was deployed.

A patch's answer is journaled as a marker, the entry `$patch:<patch id>` (so patch ids and
step names never collide), that takes no position: guarding a change never shifts the entries
an older run recorded. The replay check ignores markers (`journal.ENGINE_KINDS`), so a marker
left in a journal once the guard is removed from the code changes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import errors
from ..jsonvalues import check_text
from ..models import JOURNAL_NAME_LENGTH
from . import journal
from .interrupts import ReplayEnd
from .replay import sibling

if TYPE_CHECKING:
    from .surface import Surface

LONGEST_ID = JOURNAL_NAME_LENGTH - len(journal.PATCH_PREFIX)
"""The longest patch id: its marker's name, prefix included, fits the journal's name column."""


def check_patch_id(patch_id: Any, call: str) -> str:
    """`patch_id`, checked for `call` (e.g. "ctx.patched()"): TypeError unless a non-empty
    string, ValueError past LONGEST_ID characters or for text no database stores."""
    if not isinstance(patch_id, str) or not patch_id:
        raise TypeError(f"{call} needs patch_id, a non-empty string; got {patch_id!r}.")
    if len(patch_id) > LONGEST_ID:
        raise ValueError(
            f'{call}: the patch_id "{patch_id[:40]}..." is {len(patch_id)} characters long; the '
            f"most it can be is {LONGEST_ID} (its marker is journaled as "
            f"{journal.PATCH_PREFIX}<patch_id>)."
        )
    check_text(f"{call}: the patch_id {patch_id[:40]!r}", patch_id)
    return patch_id


def patched(x: Surface, patch_id: Any) -> bool:
    """ctx.patched(): True for a run that reaches the call before its journal goes past it
    (a marker is journaled, and every replay gets True again), False for a run whose journal,
    recorded by the code before the patch, already goes past it (that answer is journaled too).
    TypeError or ValueError for a bad patch id, WorkflowDefinitionError inside a step's function."""
    patch_id = check_patch_id(patch_id, "ctx.patched()")
    x.guards.guard_step(f'ctx.patched("{patch_id}")')
    return _answer(x, patch_id, deprecated=False)


def deprecate_patch(x: Surface, patch_id: Any) -> None:
    """ctx.deprecate_patch(): the code after the call is the patch's new branch only. A run
    that reaches it first journals the marker as patched() does; a run whose journal went past
    it without the marker (an instance of the code before the patch, still running) fails with
    WorkflowNonDeterminismError naming the patch. TypeError or ValueError for a bad patch id,
    WorkflowDefinitionError inside a step's function."""
    patch_id = check_patch_id(patch_id, "ctx.deprecate_patch()")
    x.guards.guard_step(f'ctx.deprecate_patch("{patch_id}")')
    if _answer(x, patch_id, deprecated=True):
        return
    raise x.guards.define_error(
        errors.WorkflowNonDeterminismError(
            f'Instance "{x.instance.id}" of workflow "{x.instance.workflow}@{x.instance.version}" '
            f'does not match its journal: it passed ctx.deprecate_patch("{patch_id}") without '
            f'the patch, on the code from before ctx.patched("{patch_id}") was deployed. '
            f"Deprecate a patch only once no instance that took its old branch is unfinished: "
            f'deploy ctx.patched("{patch_id}") with both branches again until they drain.'
        )
    )


def _answer(x: Surface, patch_id: str, *, deprecated: bool) -> bool:
    """The patch's answer in this run: journaled, or decided now and journaled. The first call
    with an id decides for every later one with that id, in this run and its replays."""
    name = journal.PATCH_PREFIX + patch_id
    with x.lock:  # decided and recorded at once: two gather branches get one answer
        entry = x.journal.entries.get(name)
        if entry is not None:
            if entry.get("kind") != journal.PATCH:
                raise x.guards.define_error(
                    errors.WorkflowNonDeterminismError(
                        f'Instance "{x.instance.id}" of workflow "{x.instance.workflow}@'
                        f'{x.instance.version}" does not match its journal: "{name}" was recorded '
                        f"as a {entry.get('kind')} and is now reached as a patch marker."
                    )
                )
            return bool(entry.get("result"))
        taken = not _passed(x)
        if x.journal.replay_only:
            # A replay that writes nothing (the undo's, a dry run): the journal ends here when
            # the run has not passed this point; when it has, the answer is False.
            if taken:
                raise ReplayEnd()
            return False
        # Journaled either way: False too, so that a second call with this id, further on and
        # at the journal's end, keeps the old branch, and so that the timeline shows it.
        x.journal.record(
            name,
            None,  # no position: the entries after it keep theirs
            kind=journal.PATCH,
            status=journal.COMPLETED,
            patch=patch_id,
            result=taken,
            deprecated=deprecated,
            finished_at=journal.timestamp(x.guards.now()),
        )
    x.guards.emit("patch-marked", patch=patch_id, taken=taken, deprecated=deprecated)
    return taken


def _passed(x: Surface) -> bool:
    """Whether the journal goes past the ctx call this thread is at: it holds an entry that the
    code has not reached (the caller holds the lock). Entries of the other branches of a gather
    don't count, nor do the engine's own entries and other patches' markers, which the code
    before the patch never reached in order either."""
    path = x.journal.path()
    here = (*path, x.journal.counters.get(path, 0))  # the next call's position, not taken
    return any(
        name not in x.journal.reached
        and doc.get("kind") not in journal.ENGINE_KINDS
        and not sibling(doc.get("pos"), here)
        for name, doc in x.journal.entries.items()
    )
