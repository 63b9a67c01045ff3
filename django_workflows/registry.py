"""Workflow definitions by name and version, filled by @workflow as workflows.py modules load."""

from __future__ import annotations

import threading
from typing import Any

from .definitions import Workflow
from .errors import WorkflowDefinitionError, WorkflowNotFoundError


def _origin(definition: Workflow) -> str:
    target = definition.target
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


class Registry:
    """Every registered workflow definition; several versions of one name live side by side."""

    def __init__(self) -> None:
        self._definitions: dict[tuple[str, int], Workflow] = {}
        self._lock = threading.Lock()

    def register(self, definition: Workflow) -> None:
        """Add a definition; raise WorkflowDefinitionError for a second one of the same name and version."""
        key = (definition.name, definition.version)
        with self._lock:
            existing = self._definitions.get(key)
            # The same function imported again (a reloaded module) replaces itself.
            if existing is not None and _origin(existing) != _origin(definition):
                raise WorkflowDefinitionError(
                    f"Workflow {definition.name!r} version {definition.version} is defined twice: "
                    f"by {_origin(existing)} and by {_origin(definition)}. Give the new one another "
                    f"version, or another name."
                )
            self._definitions[key] = definition

    def unregister(self, definition: Workflow) -> None:
        with self._lock:
            self._definitions.pop((definition.name, definition.version), None)

    def get(self, name: str, version: int) -> Workflow | None:
        return self._definitions.get((name, version))

    def latest(self, name: str) -> Workflow | None:
        versions = [d for (n, _), d in self._definitions.items() if n == name]
        return max(versions, key=lambda d: d.version) if versions else None

    def resolve(self, workflow: Any, version: int | None = None) -> Workflow:
        """The definition for a Workflow object or a name: `version`, or the highest registered."""
        name = workflow.name if isinstance(workflow, Workflow) else workflow
        if not isinstance(name, str):
            raise TypeError(f"Expected a workflow or a workflow name, got {workflow!r}.")
        definition = self.latest(name) if version is None else self.get(name, version)
        if definition is None:
            known = ", ".join(sorted({n for n, _ in self._definitions})) or "none"
            which = f"{name!r}" if version is None else f"{name!r} version {version}"
            raise WorkflowNotFoundError(
                f"No workflow {which} is registered in this application (registered: {known}). "
                f"Define it with @workflow in a workflows.py module of an installed app."
            )
        return definition

    def all(self) -> list[Workflow]:
        return sorted(self._definitions.values(), key=lambda d: (d.name, d.version))

    def pairs(self, names: list[str] | None = None) -> list[tuple[str, int]]:
        """(name, version) of every definition, or of those whose name is in `names`."""
        return [key for key in sorted(self._definitions) if names is None or key[0] in names]


registry = Registry()
