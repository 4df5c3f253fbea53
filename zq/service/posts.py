"""A post's messages: within the queue's post size, with its defaults applied."""

from __future__ import annotations

from typing import Any

from zq import metadata as meta
from zq import validation
from zq.config import Limits
from zq.service.bodies import Bodies, encode_body
from zq.storage.records import NewMessage


def new_messages(limits: Limits, bodies: Bodies, stored: dict[str, Any], document: Any,
                 body_size: int) -> list[NewMessage]:
    """The post's messages, within the queue's post size, with its defaults applied.

    The size cap applies to the post as the client sent it and, on a queue
    that encrypts, to the post with its bodies sealed (as Zaqar does); such
    a queue fingerprints each body keyed (``Bodies.sealed`` then seals it).
    """
    cap = min(
        limits.max_messages_post_size,
        meta.effective(stored, meta.MAX_MESSAGES_POST_SIZE, limits),
    )
    validation.body_size(body_size, cap, "The message post")
    posted = validation.posted_messages(document, limits)
    ttl = meta.effective(stored, meta.DEFAULT_MESSAGE_TTL, limits)
    delay = meta.effective(stored, meta.DEFAULT_MESSAGE_DELAY, limits)
    cipher = bodies.sealing_cipher(stored)
    keyed = bodies.fingerprint_with(cipher)
    new = []
    # NewMessage's fields by position: keywords cost a frozen dataclass a
    # third more, ten times a post.
    for body, ttl_, delay_ in posted:
        text = encode_body(body)
        new.append(NewMessage(text, ttl if ttl_ is None else ttl_,
                              delay if delay_ is None else delay_, keyed(text)))
    bodies.check_sealed_size(cipher, new, body_size, cap)
    return new
