"""Message bodies on their way in and out: canonical JSON, sealed and opened, fingerprinted.

A queue with ``_enable_encrypt_messages`` stores its bodies sealed, each
bound to its message id (zq.encryption); every read that returns bodies
opens them, deciding by the stored body's own prefix, never by the queue's
flag, and leaves out one that cannot be opened (zq.service.opening).
Drivers never know.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from zq import events, validation
from zq import metadata as meta
from zq.encryption import BodyCipher, is_sealed, open_body
from zq.errors import EncryptionFailure, EncryptionNotConfigured
from zq.service.opening import Opened, open_each
from zq.storage.base import Storage
from zq.storage.records import MessageRecord, NewMessage


def encode_body(body: Any) -> str:
    """A message body as canonical JSON text (sorted keys), the form stored."""
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()


def _sealed_post_size(cipher: BodyCipher, bodies: list[str], body_size: int) -> int:
    """The size of a post of ``body_size`` bytes once its ``bodies`` are sealed.

    Each body counts as its canonical JSON text in the post as sent, and as
    its sealed text (a JSON string: two quotes more) once encrypted.
    """
    grown = sum(cipher.sealed_length(body) + 2 - len(body.encode()) for body in bodies)
    return body_size + grown


class Bodies:
    """Sealing and opening with this server's cipher (None: no [encryption] keys)."""

    def __init__(self, cipher: BodyCipher | None) -> None:
        self._cipher = cipher

    def check_encryption(self, metadata: dict[str, Any], current: dict[str, Any]) -> None:
        """Refuse turning encryption on without keys (a flag set earlier may stay)."""
        turned_on = metadata.get(meta.ENCRYPT_MESSAGES) and not current.get(meta.ENCRYPT_MESSAGES)
        if turned_on and self._cipher is None:
            raise EncryptionNotConfigured(
                f"{meta.ENCRYPT_MESSAGES} cannot be true: this server has no [encryption] "
                "keys configured (see docs/encryption.md)."
            )

    def sealing_cipher(self, metadata: dict[str, Any]) -> BodyCipher | None:
        """The cipher a post seals with: None for a queue that does not encrypt."""
        if not metadata.get(meta.ENCRYPT_MESSAGES):
            return None
        if self._cipher is None:
            # The flag was set while keys were configured; never fall back to plaintext.
            raise EncryptionFailure(
                f"The queue has {meta.ENCRYPT_MESSAGES} set but this server has no "
                "[encryption] keys configured; refusing to store its messages unencrypted."
            )
        return self._cipher

    @staticmethod
    def fingerprint_with(cipher: BodyCipher | None) -> Callable[[str], str]:
        """How a post fingerprints its bodies: keyed on a queue that encrypts."""
        return cipher.fingerprint if cipher is not None else events.fingerprint

    @staticmethod
    def check_sealed_size(cipher: BodyCipher | None, new: list[NewMessage], body_size: int,
                          cap: int) -> None:
        """On a queue that encrypts, the post's size cap holds with its bodies sealed too."""
        if cipher is not None:
            validation.body_size(
                _sealed_post_size(cipher, [m.body for m in new], body_size), cap,
                "The message post, with its bodies encrypted,",
            )

    def sealed(self, storage: Storage, project: str, stored: dict[str, Any],
               new: list[NewMessage]) -> list[NewMessage]:
        """``new`` with sealed bodies for a queue that encrypts, each bound to its id.

        The id is drawn from the driver that stores the message, before the
        post, so that a body copied onto another message does not open.
        """
        cipher = self.sealing_cipher(stored)
        if cipher is None:
            return new
        sealed = []
        for message in new:
            message_id = storage.messages.new_id()
            sealed.append(dataclasses.replace(
                message, id=message_id, body=cipher.seal(message.body, project, message_id)))
        return sealed

    def open(self, project: str, queue: str, read: str,
              records: Sequence[MessageRecord]) -> Opened:
        """Records as clients see them: sealed bodies opened, whatever the queue's flag."""
        return open_each(self._cipher, project, queue, records, read)

    def open_one(self, project: str, record: MessageRecord) -> MessageRecord:
        """The one message asked for: one that cannot be opened is the answer's error."""
        if not is_sealed(record.body):
            return record
        return dataclasses.replace(
            record, body=open_body(self._cipher, record.body, project, record.id))

    def fingerprint_of(self, project: str, queue: str,
                        unreadable: list[str]) -> Callable[[MessageRecord], str]:
        """The fingerprint events and analytics give a stored message (keyed if sealed).

        One whose body cannot be opened has none (``""`` matches no filter);
        its id goes to ``unreadable``.
        """

        def fingerprint(record: MessageRecord) -> str:
            if not is_sealed(record.body):
                return events.fingerprint(record.body)
            opened = open_each(self._cipher, project, queue, [record], "redrive by fingerprint")
            if opened.unreadable:
                unreadable.append(record.id)
                return ""
            assert self._cipher is not None  # a sealed body opened: there are keys
            return self._cipher.fingerprint(opened.messages[0].body)

        return fingerprint
