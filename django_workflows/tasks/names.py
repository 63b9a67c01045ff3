"""The task workflow's names, without the Tasks framework: the admin and the app config read
them on deployments that do not install it."""

from __future__ import annotations

TASK_WORKFLOW = "django_workflows.task"
"""The built-in workflow each enqueued Django task is an instance of."""
STEP = "task"
"""Its one step, which runs the task's function."""
TASK_PATH = "task"
"""The key of the instance's input that holds the task's module path."""
