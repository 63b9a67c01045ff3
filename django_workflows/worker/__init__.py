"""The worker process (`manage.py runworkflows`): the worker that claims and runs due
instances, its lease renewer, its heartbeat row, its wake-ups and its health."""

from .worker import Worker

__all__ = ["Worker"]
