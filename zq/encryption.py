"""Message bodies encrypted at rest (reserved metadata ``_enable_encrypt_messages``).

The service seals a body (its canonical JSON text) before storage and
opens it on every read that returns it; drivers store the sealed text as
any other body and never know. Whether a stored body is sealed is told by
the body itself, never by the queue's current flag: a message keeps its
sealed body when it is dead lettered into a queue without the flag, and
turning the flag off leaves earlier messages readable.

Sealed form: ``zqe2:<key id>:<base64(nonce + AES-256-GCM ciphertext and tag)>``.
No JSON text starts with ``z``, so a sealed body can never be mistaken
for a plaintext one. The project and the message id are the associated
data: a sealed body copied onto another message, of this project or
another, does not open. Bodies sealed before ids were bound (``zqe1:``,
the project alone) still open while ``[encryption] open_legacy_bodies``
is on; a ``zqe2`` body relabelled ``zqe1`` does not (its associated data
differs). See docs/encryption.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
import os
from collections.abc import Mapping

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from zq.config import EncryptionConfig
from zq.errors import EncryptionFailure

PREFIX = "zqe2:"  # sealed bound to the project and the message id
LEGACY_PREFIX = "zqe1:"  # sealed bound to the project only (zq before ids were bound)
PREFIXES = (PREFIX, LEGACY_PREFIX)  # the same length
NONCE_BYTES = 12  # 96-bit random nonces, the size GCM is defined for
TAG_BYTES = 16  # AES-GCM's authentication tag, appended to the ciphertext


def is_sealed(stored: str) -> bool:
    """Whether a stored body is a sealed one (rather than plaintext JSON)."""
    return stored.startswith(PREFIXES)


def key_id_of(stored: str) -> str:
    """The id of the key a sealed body was sealed with."""
    return stored[len(PREFIX):].partition(":")[0]


def associated_data(project: str, message_id: str) -> bytes:
    """What a ``zqe2`` body is bound to: its project and its message's id.

    JSON keeps the two apart whatever the project id holds.
    """
    return orjson.dumps([project, message_id])


class BodyCipher:
    """Seals and opens bodies with a ring of AES-256-GCM keys; keys fingerprints."""

    def __init__(self, keys: Mapping[str, bytes], active: str, fingerprint_key: bytes,
                 *, open_legacy: bool = True) -> None:
        self._keys = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self._active = active
        self._fingerprint_key = fingerprint_key
        self._open_legacy = open_legacy  # [encryption] open_legacy_bodies

    @classmethod
    def from_config(cls, config: EncryptionConfig) -> BodyCipher | None:
        """The cipher of ``[encryption]``, or None when no key is configured."""
        keys = config.parsed_keys()
        if not keys:
            return None
        return cls(keys, config.active_key_id(), config.fingerprint_key_bytes(),
                   open_legacy=config.open_legacy_bodies)

    def seal(self, body: str, project: str, message_id: str) -> str:
        """``body`` (JSON text) sealed with the active key, bound to its message."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._keys[self._active].encrypt(
            nonce, body.encode(), associated_data(project, message_id))
        return f"{PREFIX}{self._active}:{base64.b64encode(nonce + sealed).decode()}"

    def open(self, stored: str, project: str, message_id: str) -> str:
        """The JSON text of a sealed body; EncryptionFailure naming the message."""
        if stored.startswith(LEGACY_PREFIX):
            if not self._open_legacy:
                raise EncryptionFailure(
                    f"Message {message_id}'s stored body was sealed before message ids were "
                    "bound (zqe1) and this server has [encryption] open_legacy_bodies = "
                    "false; turn it on to read it."
                )
            bound_to = project.encode()
        else:
            bound_to = associated_data(project, message_id)
        key_id, _, encoded = stored[len(PREFIX):].partition(":")
        aead = self._keys.get(key_id)
        if aead is None:
            raise EncryptionFailure(
                f"Message {message_id} was encrypted with key {key_id!r}, which is not in "
                "this server's [encryption] keys; restore that key to read it."
            )
        try:
            raw = base64.b64decode(encoded, validate=True)
            return aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], bound_to).decode()
        except (InvalidTag, binascii.Error, ValueError) as exc:
            raise EncryptionFailure(
                f"Message {message_id}'s stored body does not decrypt with key {key_id!r}: "
                "it was altered or copied from another message, or the key under that "
                "id changed."
            ) from exc

    def sealed_length(self, body: str) -> int:
        """The length of the text ``seal`` makes of ``body``, without sealing it.

        The sealed form's size depends on the body's size alone: the prefix,
        the active key id, and the base64 of nonce, ciphertext and tag.
        """
        raw = NONCE_BYTES + len(body.encode()) + TAG_BYTES
        return len(PREFIX) + len(self._active) + 1 + 4 * math.ceil(raw / 3)

    def fingerprint(self, body: str) -> str:
        """A keyed fingerprint of a body's JSON text (HMAC-SHA256, 16 hex digits).

        An unkeyed hash of a small or guessable body (a flag, an id) would let
        anyone with the event log confirm guesses of the plaintext.
        """
        return hmac.new(self._fingerprint_key, body.encode(), hashlib.sha256).hexdigest()[:16]


def open_body(cipher: BodyCipher | None, stored: str, project: str, message_id: str) -> str:
    """The JSON text of a sealed body; EncryptionFailure when it cannot be opened."""
    if cipher is None:
        raise EncryptionFailure(
            f"Message {message_id} is stored encrypted (key {key_id_of(stored)!r}) but this "
            "server has no [encryption] keys; configure them to read it."
        )
    return cipher.open(stored, project, message_id)
