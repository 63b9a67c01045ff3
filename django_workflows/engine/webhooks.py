"""Durable webhooks, the engine's side: ctx.webhook(name) mints a one-shot URL, journaled, and
Webhook.wait() waits for its POST as the engine's own signal `$webhook` keyed by the webhook.

A token is `django.core.signing` of [instance id, webhook name, key], salted with the instance
id and the name, so it opens one webhook of one instance and nothing else; read() checks one
(client/webhooks.py delivers the POST it opens).

Minting is journaled as `$webhook:<name>` (its random key, never the token: the token is
signed again from it on replay, and the journal holds no bearer secret; the key alone opens
nothing without SECRET_KEY, so it is kept in plain beside the result, for the view to check); the wait as
`$webhook-wait:<name>`, an ordinary wait, so a POST that comes before the wait is kept for it.
"""

from __future__ import annotations

import binascii
import json
import secrets
from typing import TYPE_CHECKING, Any

from django.core import signing
from django.core.exceptions import ImproperlyConfigured
from django.urls import NoReverseMatch, reverse

from ..conf import get_settings
from ..durations import Duration
from ..models import JOURNAL_NAME_LENGTH
from ..store.signals import WEBHOOK_SIGNAL
from . import journal, waits

if TYPE_CHECKING:
    from .surface import Surface

URL_NAME = "django_workflows:webhook"


def new_key() -> str:
    """A webhook's random key: one instance's (fork() gives a fork's copy a new one)."""
    return secrets.token_urlsafe(16)


def mint_entry(name: str) -> str:
    """The journal entry that holds the key of the webhook `name`."""
    return f"$webhook:{name}"


def wait_entry(name: str) -> str:
    """The journal entry of the wait for the webhook `name`'s POST."""
    return f"$webhook-wait:{name}"


def _signer(instance_id: str, name: str) -> signing.Signer:
    return signing.Signer(salt=f"django_workflows.webhook:{instance_id}:{name}")


def sign(instance_id: str, name: str, key: str) -> str:
    """The token of the webhook `name` of instance `instance_id` with the journaled `key`: the
    same on every replay (an HMAC of them with SECRET_KEY), URL-safe."""
    return _signer(instance_id, name).sign_object([instance_id, name, key])


def read(token: str) -> tuple[str, str, str] | None:
    """(instance id, name, key) of a token that `sign()` made with this SECRET_KEY (or one of
    SECRET_KEY_FALLBACKS), or None for anything else: a forged, altered or moved token."""
    if not isinstance(token, str) or token.count(signing.Signer().sep) != 1:
        return None
    value = token.split(signing.Signer().sep)[0]
    try:
        # The unsigned part names the salt to check the signature with; it is trusted only
        # once that signature, which covers it, holds.
        claimed = json.loads(signing.b64_decode(value.encode()).decode())
        instance_id, name, _ = claimed
        if not isinstance(instance_id, str) or not isinstance(name, str):
            return None
        checked = _signer(instance_id, name).unsign_object(token)
    except (signing.BadSignature, ValueError, TypeError, binascii.Error, UnicodeError):
        return None
    if not (
        isinstance(checked, list)
        and len(checked) == 3
        and all(isinstance(part, str) for part in checked)
    ):
        return None
    return checked[0], checked[1], checked[2]


class Webhook:
    """A webhook of a running instance: hand `url` to the other system (inside a step), then
    `wait()` for its POST. `token` is the part of the URL that opens it."""

    __slots__ = ("_key", "_name", "_x", "token", "url")

    def __init__(self, token: str, url: str, *, name: str, key: str, execution: Surface):
        self.token = token
        self.url = url
        self._name = name
        self._key = key
        self._x = execution

    def __repr__(self) -> str:
        # Not the URL: it holds the token, a bearer secret that a log line should not show.
        return f"Webhook(name={self._name!r})"

    def wait(self, timeout: Duration | None = None) -> Any:
        """Suspend until the URL receives a POST: its JSON body. None once `timeout` passes
        first (as ctx.wait_for_signal() gives), after which the URL opens nothing."""
        return wait(self._x, self._name, self._key, timeout)


def url_for(token: str) -> str:
    """WEBHOOK['BASE_URL'] followed by the path django_workflows.urls serves `token` at;
    ImproperlyConfigured if the project's URLconf does not include django_workflows.urls."""
    try:
        path = reverse(URL_NAME, kwargs={"token": token})
    except NoReverseMatch as error:
        raise ImproperlyConfigured(
            'ctx.webhook() needs the webhook view in the URLconf: add path("workflows/", '
            'include("django_workflows.urls")) to your urlpatterns.'
        ) from error
    return get_settings().webhook.base_url + path


def webhook(x: Surface, name: str) -> Webhook:
    """The webhook `name`: minted once (its key journaled), the same token on every replay."""
    longest = len(wait_entry(name))  # the longer of its two entries' names
    if longest > JOURNAL_NAME_LENGTH:
        raise ValueError(
            f'The webhook name "{name[:40]}..." is {len(name)} characters long; the most it can '
            f"be is {len(name) - longest + JOURNAL_NAME_LENGTH}."
        )
    entry_name = mint_entry(name)
    position, entry = x.journal.enter(entry_name, "webhook")
    if entry is not None and entry["status"] == journal.COMPLETED:
        key = entry["key"]
        token = sign(x.instance.id, name, key)
        return Webhook(token, url_for(token), name=name, key=key, execution=x)
    x.stops.check_interrupts(entry_name, entry)
    key = new_key()
    token = sign(x.instance.id, name, key)
    url = url_for(token)  # before the entry: a URLconf without the route records nothing
    now = journal.timestamp(x.guards.now())
    x.journal.record(
        entry_name,
        position,
        kind="webhook",
        status=journal.COMPLETED,
        started_at=now,
        finished_at=now,
        key=key,  # beside the result, not in it: plain, for the view to check (not a secret)
    )
    return Webhook(token, url, name=name, key=key, execution=x)


def wait(x: Surface, name: str, key: str, timeout: Duration | None) -> Any:
    """The wait for the POST of the webhook `name`: its body, or None past `timeout`."""
    conditions: dict[str, Any] = {"webhook": waits.SignalCondition(WEBHOOK_SIGNAL, key, None)}
    if timeout is not None:
        conditions["timeout"] = waits.timer(timeout)
    return waits.wait(x, wait_entry(name), conditions).value
