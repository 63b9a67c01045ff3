"""The receivers: one per (Django signal, sender) that some declaration maps, connected once
(with a dispatch_uid) when the app registry is ready, in every process that loads the app."""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal

from .mappings import declared_pairs, resolve_sender

DISPATCH_UID = "django_workflows.triggers"


class Receiver:
    """Receives one Django signal from one sender (None: from any) and runs the declarations
    that map exactly that pair; a receiver for sender None leaves a model's own to its own."""

    def __init__(self, signal: Signal, sender: Any) -> None:
        self.signal = signal
        self.sender = sender
        # What Django's send_robust() logs a failed receiver by.
        self.__qualname__ = f"django_workflows receiver from {sender!r}"

    def __call__(self, signal: Signal, sender: Any = None, **named: Any) -> list[Any]:
        from .sending import deliver  # the client, loaded once the app registry is ready

        return deliver(self.signal, self.sender, {"signal": signal, "sender": sender, **named})

    def __repr__(self) -> str:
        return f"<django_workflows receiver of {self.signal!r} from {self.sender!r}>"


_connected: dict[tuple[int, int], Receiver] = {}


def connect(signal: Signal, sender: Any) -> None:
    """Connect the receiver of (signal, sender), once: a second call connects nothing twice.
    Raises LookupError for a sender "app_label.ModelName" that names no installed model."""
    resolved = resolve_sender(sender)
    key = (id(signal), id(resolved))
    receiver = _connected.setdefault(key, Receiver(signal, resolved))
    # weak=False: the receiver lives as long as the process; the uid makes this idempotent.
    signal.connect(receiver, sender=resolved, weak=False, dispatch_uid=DISPATCH_UID)


def connect_receivers() -> None:
    """Connect the receivers of every declared mapping (AppConfig.ready(), after the workflows
    modules are imported). Calling it again connects nothing twice. A sender naming no
    installed model is left out: the system check E011 reports it."""
    for signal, sender in declared_pairs():
        try:
            connect(signal, sender)
        except LookupError:
            continue
