"""``_enable_encrypt_messages`` on every backend: stored sealed, read plaintext.

Each test reads the stored body straight from the driver (below the service)
to show that no plaintext reaches the backend, its events or the export,
while every read path of the service returns the plaintext.
"""

from __future__ import annotations

import base64
import os

import orjson
import pyarrow.dataset as ds
import pytest

from tests.backends import backend_name, clock, project, storage, storage_factory
from tests.service.stored_bodies import overwrite_body
from tests.unit.test_encryption import legacy_seal
from zq import events
from zq.analytics.export import export
from zq.config import EncryptionConfig, Limits
from zq.encryption import BodyCipher, is_sealed
from zq.errors import EncryptionFailure, EncryptionNotConfigured
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.service.bodies import encode_body
from zq.storage.base import Storage

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]

SECRET = "card 4111-1111-1111-1111"
BODY = {"card": SECRET, "n": 1}
ENCRYPTED = {"_enable_encrypt_messages": True}
DEAD_LETTER = {**ENCRYPTED, "_max_claim_count": 1, "_dead_letter_queue": "dlq"}


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


FINGERPRINT_KEY = new_key()
K1, K2 = new_key(), new_key()


def cipher(keys: dict[str, str], active: str = "") -> BodyCipher:
    config = EncryptionConfig(
        keys=",".join(f"{k}:{v}" for k, v in keys.items()),
        active_key=active, fingerprint_key=FINGERPRINT_KEY,
    )
    built = BodyCipher.from_config(config)
    assert built is not None
    return built


def service(storage: Storage, body_cipher: BodyCipher | None) -> QueueService:
    return QueueService(Limits(), SingleBackend(storage), cipher=body_cipher)


def post(svc: QueueService, project: str, queue: str, body: object = BODY) -> str:
    return svc.post_messages(project, queue, {"messages": [{"body": body}]},
                             client_id=None, body_size=100)[0]


def stored(storage: Storage, project: str, queue: str, message_id: str) -> str:
    """The body as the backend holds it, read below the service."""
    return storage.messages.get(project, queue, message_id).body


def plaintext(body: str) -> object:
    return orjson.loads(body)


def test_bodies_are_stored_sealed_and_every_read_path_returns_plaintext(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", ENCRYPTED)
    ids = [post(svc, project, "q", {**BODY, "n": n}) for n in range(3)]
    for message_id in ids:
        raw = stored(storage, project, "q", message_id)
        assert is_sealed(raw) and SECRET not in raw and "card" not in raw

    assert plaintext(svc.get_message(project, "q", ids[0]).body) == {**BODY, "n": 0}
    by_ids = svc.get_messages(project, "q", ids).messages
    assert [plaintext(m.body)["n"] for m in by_ids] == [0, 1, 2]
    listed = svc.list_messages(project, "q", echo=True).messages
    assert [plaintext(m.body)["n"] for m in listed] == [0, 1, 2]
    claim = svc.claim(project, "q", None, limit=1, client_id=None)
    assert claim is not None and plaintext(claim.messages[0].body)["n"] == 0
    again = svc.get_claim(project, "q", claim.id)
    assert plaintext(again.messages[0].body)["n"] == 0
    listed = svc.list_messages(project, "q", echo=True, include_claimed=True).messages
    assert [plaintext(m.body)["n"] for m in listed] == [0, 1, 2]
    popped = svc.pop_messages(project, "q", 2, client_id=None)
    assert [plaintext(m.body)["n"] for m in popped] == [1, 2]


def test_a_queue_without_the_flag_stores_plaintext(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    message_id = post(svc, project, "plain")
    assert stored(storage, project, "plain", message_id) == encode_body(BODY)


def test_a_dead_lettered_message_stays_sealed_and_readable_in_a_plain_queue(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", DEAD_LETTER)
    message_id = post(svc, project, "q")
    first = svc.claim(project, "q", None, limit=1, client_id=None)
    assert first is not None
    svc.release_claim(project, "q", first.id, client_id=None)
    assert svc.claim(project, "q", None, limit=1, client_id=None) is None  # moved
    assert svc.queue_metadata(project, "dlq")["_enable_encrypt_messages"] is False
    assert is_sealed(stored(storage, project, "dlq", message_id))
    assert plaintext(svc.get_message(project, "dlq", message_id).body) == BODY
    claimed = svc.claim(project, "dlq", None, limit=1, client_id=None)
    assert claimed is not None and plaintext(claimed.messages[0].body) == BODY


def test_turning_the_flag_off_keeps_earlier_messages_readable(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", ENCRYPTED)
    sealed_id = post(svc, project, "q")
    svc.patch_metadata(project, "q", [
        {"op": "replace", "path": "/metadata/_enable_encrypt_messages", "value": False}])
    plain_id = post(svc, project, "q", {"after": True})
    assert is_sealed(stored(storage, project, "q", sealed_id))
    assert stored(storage, project, "q", plain_id) == encode_body({"after": True})
    bodies = [plaintext(m.body) for m in svc.list_messages(project, "q", echo=True).messages]
    assert bodies == [BODY, {"after": True}]


def test_rotation_new_posts_use_the_active_key_and_old_ones_stay_readable(storage, project):
    before = service(storage, cipher({"k1": K1}))
    before.create_queue(project, "q", ENCRYPTED)
    old_id = post(before, project, "q")
    after = service(storage, cipher({"k1": K1, "k2": K2}, active="k2"))
    new_id = post(after, project, "q", {"new": True})
    assert stored(storage, project, "q", old_id).startswith("zqe2:k1:")
    assert stored(storage, project, "q", new_id).startswith("zqe2:k2:")
    bodies = [plaintext(m.body) for m in after.list_messages(project, "q", echo=True).messages]
    assert bodies == [BODY, {"new": True}]
    # Both keys give one fingerprint per body: poison analysis spans rotation.
    assert (cipher({"k1": K1}).fingerprint(encode_body(BODY))
            == cipher({"k2": K2}).fingerprint(encode_body(BODY)))


def test_a_retired_key_is_a_clear_error_and_no_message_is_lost(storage, project, clock):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", ENCRYPTED)
    message_id = post(svc, project, "q")
    retired = service(storage, cipher({"k2": K2}))
    for read in (
        lambda: retired.get_message(project, "q", message_id),
        lambda: retired.pop_messages(project, "q", 1, client_id=None),
    ):
        with pytest.raises(EncryptionFailure, match=rf"{message_id}.*key 'k1'"):
            read()
    # The pop checked before it removed anything.
    assert retired.queue_stats(project, "q").total == 1
    page = retired.list_messages(project, "q", echo=True)
    assert page.messages == [] and [u.id for u in page.unreadable] == [message_id]
    assert "key 'k1'" in page.unreadable[0].reason
    claim = retired.claim(project, "q", None, limit=1, client_id=None)
    assert claim is not None and claim.messages == []
    assert [u.id for u in claim.unreadable] == [message_id]
    # Not held by a claim nobody got: back after the claim's ttl, and
    # readable again once the key is back.
    assert retired.queue_stats(project, "q").claimed == 0
    clock.advance(claim.ttl + 1)
    again = svc.claim(project, "q", None, limit=1, client_id=None)
    assert again is not None and plaintext(again.messages[0].body) == BODY


def test_a_server_without_keys_refuses_the_flag_and_posts_to_flagged_queues(storage, project):
    keyless = service(storage, None)
    with pytest.raises(EncryptionNotConfigured, match="no \\[encryption\\] keys"):
        keyless.create_queue(project, "q", ENCRYPTED)
    keyless.create_queue(project, "q", {})
    with pytest.raises(EncryptionNotConfigured):
        keyless.patch_metadata(project, "q", [
            {"op": "add", "path": "/metadata/_enable_encrypt_messages", "value": True}])
    # A queue flagged while keys were configured: never stored in plaintext.
    service(storage, cipher({"k1": K1})).create_queue(project, "flagged", ENCRYPTED)
    with pytest.raises(EncryptionFailure, match="refusing to store"):
        post(keyless, project, "flagged")
    assert keyless.queue_stats(project, "flagged").total == 0
    # Its other settings still change, and the flag can be turned off.
    shown = keyless.patch_metadata(project, "flagged", [
        {"op": "add", "path": "/metadata/color", "value": "red"}])
    assert shown["_enable_encrypt_messages"] is True and shown["color"] == "red"
    keyless.patch_metadata(project, "flagged", [
        {"op": "remove", "path": "/metadata/_enable_encrypt_messages"}])
    post(keyless, project, "flagged")


def test_events_and_the_export_hold_no_plaintext_and_a_keyed_fingerprint(
    storage, project, tmp_path
):
    body_cipher = cipher({"k1": K1})
    svc = service(storage, body_cipher)
    svc.create_queue(project, "q", DEAD_LETTER)
    message_id = post(svc, project, "q")
    first = svc.claim(project, "q", None, limit=1, client_id=None)
    assert first is not None
    svc.release_claim(project, "q", first.id, client_id=None)
    assert svc.claim(project, "q", None, limit=1, client_id=None) is None  # dead lettered
    mine = [e for e in storage.events.read(limit=100_000) if e.project == project]
    kinds = {e.kind for e in mine}
    assert {events.POSTED, events.DEAD_LETTERED} <= kinds
    text = repr(mine)
    assert SECRET not in text and "card" not in text
    keyed = body_cipher.fingerprint(encode_body(BODY))
    assert keyed != events.fingerprint(encode_body(BODY))
    for event in mine:
        if event.kind in (events.POSTED, events.DEAD_LETTERED):
            assert event.message_id == message_id
            assert event.detail["fingerprint"] == keyed

    export({"backend": storage}, str(tmp_path))
    table = ds.dataset(str(tmp_path), format="parquet", partitioning="hive").to_table()
    rows = [r for r in table.to_pylist() if r["project"] == project]
    assert {r["kind"] for r in rows} == kinds
    dead = [r for r in rows if r["kind"] == events.DEAD_LETTERED]
    assert dead and dead[0]["sample"] is None and dead[0]["fingerprint"] == keyed
    dumped = repr(rows)
    assert SECRET not in dumped and "zqe2:" not in dumped


def test_a_body_copied_onto_another_message_is_refused(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", ENCRYPTED)
    a = post(svc, project, "q", {"to": "alice"})
    b = post(svc, project, "q", {"to": "mallory"})
    overwrite_body(storage, a, stored(storage, project, "q", b))
    with pytest.raises(EncryptionFailure, match=rf"{a}.*copied from another message"):
        svc.get_message(project, "q", a)
    assert plaintext(svc.get_message(project, "q", b).body) == {"to": "mallory"}


def test_a_dead_lettered_and_redriven_message_still_opens(storage, project):
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", DEAD_LETTER)
    message_id = post(svc, project, "q")
    first = svc.claim(project, "q", None, limit=1, client_id=None)
    assert first is not None
    svc.release_claim(project, "q", first.id, client_id=None)
    assert svc.claim(project, "q", None, limit=1, client_id=None) is None  # dead lettered
    assert plaintext(svc.get_message(project, "dlq", message_id).body) == BODY
    result = svc.redrive(project, "dlq", None, client_id=None)
    assert result.moved == 1
    assert plaintext(svc.get_message(project, "q", message_id).body) == BODY
    claimed = svc.claim(project, "q", None, limit=1, client_id=None)
    assert claimed is not None and [m.id for m in claimed.messages] == [message_id]
    assert plaintext(claimed.messages[0].body) == BODY


def test_bodies_sealed_before_ids_were_bound_still_open(storage, project):
    """A deployment upgraded with zqe1 bodies (project only) in its queues."""
    svc = service(storage, cipher({"k1": K1}))
    svc.create_queue(project, "q", ENCRYPTED)
    old, new = post(svc, project, "q"), post(svc, project, "q", {"new": True})
    overwrite_body(storage, old, legacy_seal(K1, "k1", encode_body(BODY), project))
    assert plaintext(svc.get_message(project, "q", old).body) == BODY
    assert stored(storage, project, "q", new).startswith("zqe2:")
    assert plaintext(svc.get_message(project, "q", new).body) == {"new": True}
