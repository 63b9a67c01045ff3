"""An instance's subject: the model instance it is about (`start(..., subject=obj)`), stored as
a content type and the primary key's text, and the label `"app_label.model:pk"` it is shown by.

Below the models (they take their `for_subject()` filter from here) and below the client and
the instances room, which check and store a subject through it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import Q

from .jsonvalues import check_text


def check_subject(subject: Any, what: str = "subject") -> None:
    """Refuse anything but a saved model instance, without any SQL: TypeError for a model
    class or a value that is not a model instance, ValueError for an unsaved instance or one
    whose primary key is None. `what` names the argument in the message."""
    if isinstance(subject, type):
        raise TypeError(
            f"{what} must be a saved model instance, not the class {subject.__qualname__}: "
            f"pass one of its rows."
        )
    if not isinstance(subject, models.Model):
        raise TypeError(f"{what} must be a saved model instance, not {type(subject).__name__}.")
    name = type(subject).__name__
    if subject.pk is None:
        raise ValueError(f"{what} must be a saved model instance; this {name} has no primary key.")
    if subject._state.adding:
        raise ValueError(
            f"{what} must be a saved model instance; this {name} (pk {subject.pk!r}) was never "
            f"saved: save it first."
        )


def subject_key(subject: Any, using: str, what: str = "subject") -> tuple[ContentType, str]:
    """The subject's content type (in the database `using`, whose table the instance's foreign
    key points to) and its primary key as text, after check_subject().

    The content type is read once per model and process (Django caches it), and created when
    missing, as Django does for its own generic relations. Raises what check_subject() raises,
    and ValueError for a primary key whose text holds a NUL or a lone surrogate.
    """
    check_subject(subject, what)
    object_id = str(subject.pk)
    check_text(f"The primary key of {what}", object_id)
    manager = ContentType.objects.db_manager(using)
    # A proxy's rows are its concrete model's: both find the same instances.
    return manager.get_for_model(subject, for_concrete_model=True), object_id


def subject_filter(subject: Any, using: str, what: str = "subject") -> Q:
    """The condition on WorkflowInstance for instances about `subject` (the subject index)."""
    content_type, object_id = subject_key(subject, using, what)
    return Q(subject_type_id=content_type.pk, subject_id=object_id)


def subject_label(content_type_id: int | None, object_id: str | None, using: str) -> str | None:
    """`"app_label.model:pk"` for a stored subject, None without one. No query once the
    content type is in Django's cache."""
    if content_type_id is None or object_id is None:
        return None
    content_type = ContentType.objects.db_manager(using).get_for_id(content_type_id)
    return f"{content_type.app_label}.{content_type.model}:{object_id}"
