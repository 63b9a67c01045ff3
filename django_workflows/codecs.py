"""Payload codecs: what the store keeps of your data, encoded (encrypted) before it is written.

A codec turns a JSON value into a string and back, given *where* the value is stored (a string
that names the table, the row and the field). The store keeps an encoded value as

    $wf1:<codec id>:<what the codec returned>

in the same JSON column, so nothing in the schema changes. The first codec of the CODEC setting
encodes; every listed codec decodes what carries its id. Strings that start with `$wf` are the
store's: a plain string value that starts so (the application's data, whatever it holds) is
kept with `$wf0:` in front and given back without it, so a stored value is encoded exactly when
it starts with `$wf1:`. Any other value (stored before a codec was set, or without one) is read
as it is.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import re
import zlib
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .conf import get_settings
from .errors import WorkflowPayloadError

__all__ = [
    "ESCAPE",
    "PREFIX",
    "AesGcmPayloadCodec",
    "PayloadCodec",
    "configured_codecs",
    "decode",
    "encode",
    "is_encoded",
]

PREFIX = "$wf1:"  # an encoded value: $wf1:<codec id>:<body>
ESCAPE = "$wf0:"  # a plain string that starts with RESERVED, kept behind this
RESERVED = "$wf"
_ID = re.compile(r"^[A-Za-z0-9_-]+$")


@runtime_checkable
class PayloadCodec(Protocol):
    """What a codec implements. `id` is stored with every payload it encodes: keep it stable."""

    id: str

    def encode(self, value: Any, where: str) -> str:
        """Encode a JSON value stored at `where`; the result must not depend on decoding
        anything but `where` and the codec's own secrets."""

    def decode(self, stored: str, where: str) -> Any:
        """The value `encode(value, where)` was given; raise WorkflowPayloadError when it cannot
        be read (a key that is not listed, a payload changed or moved from another place).
        Anything else it raises is taken the same way: the payload cannot be read now."""


class AesGcmPayloadCodec:
    """AES-256-GCM under keys you list by id (32 random bytes each, in base64).

    Each payload gets a key of its own, derived with HKDF-SHA256 from the listed key and a
    random salt, and `where` as authenticated data: a payload that was changed, or copied to
    another instance or field, fails to decrypt instead of being read. Payloads of 1 KiB or more
    are compressed first unless `compress=False` (turn it off when payloads mix secrets with
    data an attacker chooses and attackers can see stored sizes).

    Stored form (after the store's prefix): `<key id>.<base64url of salt, nonce, ciphertext>`.
    """

    id = "aes-256-gcm"
    COMPRESS_FROM = 1024
    _SALT = 16
    _NONCE = 12
    _COMPRESSED = 1

    def __init__(
        self, keys: Mapping[str, str | bytes], current: str | None = None, compress: bool = True
    ):
        if not isinstance(keys, Mapping) or not keys:
            raise ValueError("AesGcmPayloadCodec needs keys: a dict of key id to base64 key.")
        self._keys: dict[str, bytes] = {}
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not _ID.match(key_id):
                raise ValueError(
                    f"AesGcmPayloadCodec key id {key_id!r} must be letters, digits, '-' or '_'."
                )
            self._keys[key_id] = _key_bytes(key_id, key)
        if current is None:
            if len(self._keys) > 1:
                raise ValueError(
                    "AesGcmPayloadCodec has several keys: say which encrypts with current=..."
                )
            current = next(iter(self._keys))
        if current not in self._keys:
            raise ValueError(
                f"AesGcmPayloadCodec current key {current!r} is not one of its keys "
                f"({', '.join(sorted(self._keys))})."
            )
        self.current = current
        self.compress = compress

    def __repr__(self) -> str:  # never the keys themselves
        return f"AesGcmPayloadCodec(keys=[{', '.join(self._keys)}], current={self.current!r})"

    def _derive(self, key_id: str, salt: bytes) -> AESGCM:
        info = b"django-workflows payload " + key_id.encode()
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info)
        return AESGCM(derived.derive(self._keys[key_id]))

    def encode(self, value: Any, where: str) -> str:
        data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        flags = 0
        if self.compress and len(data) >= self.COMPRESS_FROM:
            data, flags = zlib.compress(data), self._COMPRESSED
        salt, nonce = os.urandom(self._SALT), os.urandom(self._NONCE)
        sealed = self._derive(self.current, salt).encrypt(
            nonce, bytes([flags]) + data, where.encode()
        )
        body = base64.urlsafe_b64encode(salt + nonce + sealed).rstrip(b"=").decode()
        return f"{self.current}.{body}"

    def decode(self, stored: str, where: str) -> Any:
        key_id, dot, body = stored.partition(".")
        if not dot or key_id not in self._keys:
            raise WorkflowPayloadError(
                f"The payload at {where} is encrypted with key {key_id!r}, which the codec does "
                f"not list (it lists {', '.join(sorted(self._keys))}). Add the key back to read it.",
                key=key_id,
            )
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            salt, nonce = raw[: self._SALT], raw[self._SALT : self._SALT + self._NONCE]
            plain = self._derive(key_id, salt).decrypt(
                nonce, raw[self._SALT + self._NONCE :], where.encode()
            )
        except (InvalidTag, ValueError, binascii.Error) as error:
            raise WorkflowPayloadError(
                f"The payload at {where} failed to decrypt with key {key_id!r}: it was changed, "
                f"or moved from another instance or field.",
                key=key_id,
            ) from error
        data = plain[1:]
        if plain[0] & self._COMPRESSED:
            data = zlib.decompress(data)
        return json.loads(data)


def _key_bytes(key_id: str, key: Any) -> bytes:
    if key is None or key == "" or key == b"":
        raise ValueError(
            f"AesGcmPayloadCodec key {key_id!r} is missing (an unset environment variable?)."
        )
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, bytes):
        raise ValueError(f"AesGcmPayloadCodec key {key_id!r} must be a base64 string.")
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"AesGcmPayloadCodec key {key_id!r} is not base64 (make one with "
            f"`openssl rand -base64 32`)."
        ) from None
    if len(raw) != 32:
        raise ValueError(
            f"AesGcmPayloadCodec key {key_id!r} is {len(raw)} bytes, not 32 (make one with "
            f"`openssl rand -base64 32`)."
        )
    return raw


# -- the CODEC setting ---------------------------------------------------------------------------


@functools.cache
def configured_codecs() -> tuple[PayloadCodec, ...]:
    """The codecs of the CODEC setting, the encoding one first; raises ValueError naming a bad one."""
    raw = get_settings().codec
    if raw is None:
        return ()
    items = raw if isinstance(raw, list | tuple) else [raw]
    codecs: list[PayloadCodec] = []
    for item in items:
        codec = _resolve(item)
        if any(other.id == codec.id for other in codecs):
            raise ValueError(f"DJANGO_WORKFLOWS['CODEC'] lists two codecs with id {codec.id!r}.")
        codecs.append(codec)
    return tuple(codecs)


def _resolve(item: Any) -> PayloadCodec:
    where = "DJANGO_WORKFLOWS['CODEC']"
    if isinstance(item, str):
        try:
            item = import_string(item)
        except ImportError as error:
            raise ValueError(f"{where}: cannot import {item!r} ({error}).") from None
    if isinstance(item, type):
        item = item()
    codec_id = getattr(item, "id", None)
    if not (callable(getattr(item, "encode", None)) and callable(getattr(item, "decode", None))):
        raise ValueError(f"{where}: {item!r} is not a codec (it needs id, encode() and decode()).")
    if not isinstance(codec_id, str) or not codec_id or ":" in codec_id:
        raise ValueError(f"{where}: the id of {item!r} must be a short string without ':'.")
    return item  # type: ignore[no-any-return]


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == "DJANGO_WORKFLOWS":
        configured_codecs.cache_clear()


# -- what the store calls ------------------------------------------------------------------------


def where(*parts: Any) -> str:
    """Where a payload is stored, as the codecs see it: a JSON array such as
    `["instance", "order-1", "input"]` (unambiguous whatever the ids hold)."""
    return json.dumps(parts, separators=(",", ":"), ensure_ascii=False)


def is_encoded(stored: Any) -> bool:
    """Whether a stored value is an encoded payload (and not the application's data)."""
    return isinstance(stored, str) and stored.startswith(PREFIX)


def encode(value: Any, at: str) -> Any:
    """`value` as the store keeps it at `at`: encoded by the first codec, or as it is without
    one (a string that starts with `$wf` escaped). None stays None (an empty field says
    nothing)."""
    codecs = configured_codecs()
    if value is None:
        return None
    if not codecs:
        return escape(value)
    codec = codecs[0]
    return f"{PREFIX}{codec.id}:{codec.encode(value, at)}"


def escape(value: Any) -> Any:
    """A plain value as stored: a string that starts with `$wf` gets `$wf0:` in front, so that
    no data is ever taken for an encoded payload; anything else as it is."""
    if isinstance(value, str) and value.startswith(RESERVED):
        return ESCAPE + value
    return value


def decode(stored: Any, at: str) -> Any:
    """The value stored at `at`; raises WorkflowPayloadError when no listed codec can read it."""
    if not isinstance(stored, str) or not stored.startswith(RESERVED):
        return stored  # the common case first: a plain value
    if stored.startswith(ESCAPE):
        return stored[len(ESCAPE) :]
    if not stored.startswith(PREFIX):
        return stored  # stored before strings starting with $wf were escaped
    codec_id, colon, body = stored[len(PREFIX) :].partition(":")
    for codec in configured_codecs():
        if codec.id == codec_id:
            try:
                return codec.decode(body, at)
            except WorkflowPayloadError:
                raise
            except Exception as error:  # a codec of one's own: its key service down, say
                raise WorkflowPayloadError(
                    f"The payload at {at} failed to decode with codec {codec_id!r}: {error!r}",
                    key=codec_id,
                ) from error
    listed = ", ".join(codec.id for codec in configured_codecs()) or "none"
    raise WorkflowPayloadError(
        f"The payload at {at} was encoded by codec {codec_id!r}, which DJANGO_WORKFLOWS['CODEC'] "
        f"does not list (it lists {listed}).",
        key=codec_id,
    )
