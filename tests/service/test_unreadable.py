"""A sealed body that cannot be opened fails alone, on every backend.

One altered (or copied, or keyless) body among good ones: a claim delivers
the good ones and sets the bad one aside, a listing pages past it, a
redrive filtered by fingerprint moves the others; none of them fails as a
whole or holds and counts the bad message's neighbours (docs/encryption.md).
"""

from __future__ import annotations

import base64

import pytest

from tests.backends import backend_name, clock, project, storage, storage_factory
from tests.service.stored_bodies import overwrite_body
from tests.service.test_encryption import (
    BODY,
    ENCRYPTED,
    K1,
    cipher,
    plaintext,
    post,
    service,
    stored,
)
from zq.errors import ClaimNotFound, EncryptionFailure
from zq.poison import moves
from zq.service import QueueService
from zq.service.bodies import encode_body
from zq.storage.base import Storage

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]

WITH_DLQ = {**ENCRYPTED, "_dead_letter_queue": "dlq", "_max_claim_count": 1}


def spoil(storage: Storage, project: str, queue: str, message_id: str) -> None:
    """Flip one bit of the message's stored ciphertext."""
    prefix, encoded = stored(storage, project, queue, message_id).rsplit(":", 1)
    raw = bytearray(base64.b64decode(encoded))
    raw[-1] ^= 1
    overwrite_body(storage, message_id, f"{prefix}:{base64.b64encode(bytes(raw)).decode()}")


def three(svc: QueueService, storage: Storage, project: str, queue: str,
          metadata: dict[str, object]) -> tuple[str, str, str]:
    """Good, bad, good: the middle one's body spoiled."""
    svc.create_queue(project, queue, metadata)
    first, bad, last = (post(svc, project, queue, {"n": n}) for n in range(3))
    spoil(storage, project, queue, bad)
    return first, bad, last


def test_a_claim_delivers_the_good_messages_and_sets_the_bad_one_aside(storage, project, clock):
    svc = service(storage, cipher({"k1": K1}))
    first, bad, last = three(svc, storage, project, "q", ENCRYPTED)
    claim = svc.claim(project, "q", None, limit=10, client_id=None)
    assert claim is not None
    assert [m.id for m in claim.messages] == [first, last]
    assert [plaintext(m.body) for m in claim.messages] == [{"n": 0}, {"n": 2}]
    assert [u.id for u in claim.unreadable] == [bad]
    assert "does not decrypt" in claim.unreadable[0].reason
    # The claim its holder got holds the good ones, counted once each; the
    # bad one left it (its own count only) and waits out the claim's ttl.
    held = storage.claims.get(project, "q", claim.id).messages
    assert [(m.id, m.claim_count) for m in held] == [(first, 1), (last, 1)]
    aside = storage.messages.get(project, "q", bad)
    assert aside.claim_id is None and aside.claim_count == 1
    assert svc.claim(project, "q", None, limit=10, client_id=None) is None
    for message in claim.messages:
        svc.delete_message(project, "q", message.id, claim_id=claim.id, client_id=None)
    clock.advance(claim.ttl + 1)
    again = svc.claim(project, "q", None, limit=10, client_id=None)
    assert again is not None and again.messages == [] and [u.id for u in again.unreadable] == [bad]
    assert svc.queue_stats(project, "q").total == 1  # never lost


def test_with_a_dead_letter_queue_the_bad_one_moves_there_and_the_good_ones_stay(
    storage, project
):
    svc = service(storage, cipher({"k1": K1}))
    first, bad, last = three(svc, storage, project, "q", WITH_DLQ)
    claim = svc.claim(project, "q", None, limit=10, client_id=None)
    assert claim is not None and [m.id for m in claim.messages] == [first, last]
    assert [u.id for u in claim.unreadable] == [bad]
    moved = storage.messages.get(project, "dlq", bad)
    assert moved.history[-1][moves.REASON] == moves.REASON_UNREADABLE
    assert "does not decrypt" in moved.history[-1][moves.DESCRIPTION]
    # The good neighbours are still the claim's, not dead lettered.
    svc.release_claim(project, "q", claim.id, client_id=None)
    assert [m.id for m in svc.list_messages(project, "q").messages] == [first, last]
    assert [u.id for u in svc.list_messages(project, "dlq").unreadable] == [bad]


def test_a_claim_that_took_only_unreadable_messages_delivers_nothing(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", ENCRYPTED)
    bad = post(svc, project, "q")
    spoil(storage, project, "q", bad)
    claim = svc.claim(project, "q", None, limit=10, client_id=None)
    assert claim is not None and claim.messages == [] and [u.id for u in claim.unreadable] == [bad]
    with pytest.raises(ClaimNotFound):  # released: nobody holds an empty claim
        storage.claims.get(project, "q", claim.id)


def test_a_listing_leaves_the_bad_one_out_and_pages_past_it(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    first, bad, last = three(svc, storage, project, "q", ENCRYPTED)
    page = svc.list_messages(project, "q", echo=True, limit=2)
    assert [m.id for m in page.messages] == [first] and [u.id for u in page.unreadable] == [bad]
    assert page.last_marker == storage.messages.get(project, "q", bad).marker
    following = svc.list_messages(project, "q", echo=True, marker=str(page.last_marker))
    assert [m.id for m in following.messages] == [last] and following.unreadable == []
    by_ids = svc.get_messages(project, "q", [first, bad, last])
    assert [m.id for m in by_ids.messages] == [first, last]
    assert [u.id for u in by_ids.unreadable] == [bad]
    with pytest.raises(EncryptionFailure, match=bad):  # the one message asked for
        svc.get_message(project, "q", bad)
    # A claim read back later leaves it out too.
    claim = svc.claim(project, "q", None, limit=1, client_id=None)
    assert claim is not None
    spoil(storage, project, "q", first)
    read = svc.get_claim(project, "q", claim.id)
    assert read.messages == [] and [u.id for u in read.unreadable] == [first]


def test_a_pop_sets_the_bad_one_aside_with_a_dead_letter_queue(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    first, bad, last = three(svc, storage, project, "q", WITH_DLQ)
    popped = svc.pop_messages(project, "q", 3, client_id=None)
    assert [m.id for m in popped] == [first, last]
    assert storage.messages.get(project, "dlq", bad).history[-1][moves.REASON] == "unreadable"


def test_a_pop_without_a_dead_letter_queue_is_refused_and_removes_nothing(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    three(svc, storage, project, "q", ENCRYPTED)
    with pytest.raises(EncryptionFailure, match="does not decrypt"):
        svc.pop_messages(project, "q", 3, client_id=None)
    assert svc.queue_stats(project, "q").total == 3


def test_a_redrive_by_fingerprint_moves_the_others_and_names_the_bad_one(storage, project):
    body_cipher = cipher({"k1": K1})
    svc = service(storage, body_cipher)
    svc.create_queue(project, "q", WITH_DLQ)
    ids = [post(svc, project, "q") for _ in range(3)]
    first = svc.claim(project, "q", None, limit=10, client_id=None)
    assert first is not None
    svc.release_claim(project, "q", first.id, client_id=None)
    assert svc.claim(project, "q", None, limit=10, client_id=None) is None  # all dead lettered
    spoil(storage, project, "dlq", ids[1])
    wanted = body_cipher.fingerprint(encode_body(BODY))
    dry = svc.redrive(project, "dlq", {"filter": {"fingerprint": wanted}, "dry_run": True},
                      client_id=None)
    assert (dry.matched, list(dry.unreadable)) == (2, [ids[1]])
    result = svc.redrive(project, "dlq", {"filter": {"fingerprint": wanted}}, client_id=None)
    assert (result.matched, result.moved) == (2, 2)
    assert result.as_dict()["unreadable"] == [ids[1]]
    assert [m.id for m in svc.list_messages(project, "q").messages] == [ids[0], ids[2]]
    # Without a fingerprint no body is opened: it moves (sealed) with the rest.
    rest = svc.redrive(project, "dlq", {"filter": {"from": "q"}}, client_id=None)
    assert (rest.moved, "unreadable" in rest.as_dict()) == (1, False)
