"""``_enable_encrypt_messages`` over HTTP: shown, validated, refused without keys."""

from __future__ import annotations

import base64
import math
import os

import pytest

from tests.api.helpers import Api, assert_error
from tests.service.stored_bodies import overwrite_body
from zq.api import create_app
from zq.config import Config
from zq.encryption import is_sealed
from zq.service.opening import HEADER as UNREADABLE

FLAG = "_enable_encrypt_messages"


def keys_config(key_id: str) -> Config:
    return Config().with_overrides(encryption={
        "keys": f"{key_id}:{base64.b64encode(os.urandom(32)).decode()}",
        "fingerprint_key": base64.b64encode(os.urandom(32)).decode(),
    })


@pytest.fixture
def keyed(storage, clock, project) -> Api:
    return Api(create_app(keys_config("k1"), storage=storage, clock=clock), project)


def test_the_flag_is_shown_false_by_default(api):
    assert api.get("/v2/queues/never-created").json[FLAG] is False
    api.put("/v2/queues/q", json={"color": "red"})
    assert api.get("/v2/queues/q").json[FLAG] is False
    listed = api.get("/v2/queues", params={"detailed": "true"}).json["queues"]
    assert listed[0]["metadata"][FLAG] is False


def test_true_is_refused_with_400_when_no_key_is_configured(api):
    assert_error(api.put("/v2/queues/q", json={FLAG: True}), 400, "no [encryption] keys")
    assert api.get("/v2/queues/q").json[FLAG] is False
    api.put("/v2/queues/q")
    result = api.patch_metadata("q", [{"op": "add", "path": f"/metadata/{FLAG}", "value": True}])
    assert_error(result, 400, "no [encryption] keys")
    assert result.json["title"] == "Encryption is not configured"
    assert api.get("/v2/queues/q").json[FLAG] is False
    # false needs no key.
    assert api.put("/v2/queues/other", json={FLAG: False}).status_code == 201


@pytest.mark.parametrize("value", [1, "true", {}])
def test_the_flag_must_be_a_boolean(keyed, value):
    assert_error(keyed.put("/v2/queues/q", json={FLAG: value}), 400, "must be true or false")


def test_clients_post_and_read_plaintext_while_the_backend_holds_it_sealed(keyed, storage):
    assert keyed.put("/v2/queues/q", json={FLAG: True}).status_code == 201
    assert keyed.get("/v2/queues/q").json[FLAG] is True
    [message_id] = keyed.post_messages("q", {"body": {"pin": "2468"}})
    assert keyed.get(f"/v2/queues/q/messages/{message_id}").json["body"] == {"pin": "2468"}
    claimed = keyed.claim("q")
    assert claimed.status_code == 201
    assert claimed.json["messages"][0]["body"] == {"pin": "2468"}
    raw = storage.messages.get(keyed.project, "q", message_id).body
    assert is_sealed(raw) and "2468" not in raw


def test_a_body_sealed_with_a_key_the_server_lacks_is_a_clean_500(keyed, storage, clock):
    keyed.put("/v2/queues/q", json={FLAG: True})
    [message_id] = keyed.post_messages("q", {"body": "hello"})
    other = Api(create_app(keys_config("k2"), storage=storage, clock=clock), keyed.project)
    for result in (
        other.get(f"/v2/queues/q/messages/{message_id}"),
        other.delete("/v2/queues/q/messages", params={"pop": 1}),
    ):
        assert_error(result, 500, f"Message {message_id} was encrypted with key 'k1'")
        assert result.json["title"] == "Message encryption failed"
    # Nothing was lost: the server with the key still reads it.
    assert keyed.get(f"/v2/queues/q/messages/{message_id}").json["body"] == "hello"


def test_unreadable_messages_are_left_out_and_named_in_a_header(keyed, storage, clock):
    keyed.put("/v2/queues/q", json={FLAG: True})
    good, bad, last = keyed.post_messages("q", {"body": 1}, {"body": 2}, {"body": 3})
    overwrite_body(storage, bad, storage.messages.get(keyed.project, "q", good).body)

    listed = keyed.get("/v2/queues/q/messages", params={"echo": "true", "limit": 2})
    assert listed.status_code == 200
    assert [m["id"] for m in listed.json["messages"]] == [good]
    assert listed.headers[UNREADABLE] == bad
    following = keyed.get(listed.json["links"][0]["href"])
    assert [m["id"] for m in following.json["messages"]] == [last]
    assert UNREADABLE not in following.headers

    by_ids = keyed.get("/v2/queues/q/messages", params={"ids": bad})
    assert by_ids.status_code == 200 and by_ids.json == {"messages": []}
    assert by_ids.headers[UNREADABLE] == bad

    claimed = keyed.claim("q", limit=10)
    assert claimed.status_code == 201
    assert [m["body"] for m in claimed.json["messages"]] == [1, 3]
    assert claimed.headers[UNREADABLE] == bad
    claim_path = claimed.headers["location"]
    shown = keyed.get(claim_path)
    assert [m["body"] for m in shown.json["messages"]] == [1, 3]
    assert UNREADABLE not in shown.headers  # it left the claim
    for message in claimed.json["messages"]:
        assert keyed.delete(message["href"]).status_code == 204
    # Only the bad one left, set aside for the claim's ttl: nothing to claim.
    assert keyed.claim("q").status_code == 204
    clock.advance(61)
    nothing = keyed.claim("q")
    assert nothing.status_code == 204 and nothing.headers[UNREADABLE] == bad


def test_a_redrive_by_fingerprint_names_the_messages_it_could_not_judge(keyed, storage):
    keyed.put("/v2/queues/q", json={FLAG: True, "_dead_letter_queue": "dlq",
                                      "_max_claim_count": 1})
    good, bad = keyed.post_messages("q", {"body": 1}, {"body": 1})
    keyed.delete(keyed.claim("q").headers["location"])
    assert keyed.claim("q").status_code == 204  # both dead lettered
    overwrite_body(storage, bad, storage.messages.get(keyed.project, "dlq", good).body)
    [event] = [e for e in storage.events.read(limit=1000)
               if e.message_id == good and e.kind == "posted"]
    result = keyed.post("/v2/queues/dlq/redrive",
                        json={"filter": {"fingerprint": event.detail["fingerprint"]}})
    assert result.status_code == 200
    assert result.json == {"matched": 1, "moved": 1, "to": {"q": 1}, "created": [],
                           "next": None, "unreadable": [bad]}


def sealed_text_length(body_json: str, key_id: str = "k1") -> int:
    """docs/encryption.md: prefix, key id, ':', base64(12-byte nonce + text + 16-byte tag)."""
    return len("zqe2:") + len(key_id) + 1 + 4 * math.ceil((12 + len(body_json) + 16) / 3)


def post_body(n: int) -> bytes:
    return b'{"messages":[{"body":"' + b"x" * n + b'"}]}'


def test_the_post_size_limit_applies_to_the_encrypted_post_as_in_zaqar(keyed, storage):
    # Zaqar refuses (400) a post whose encrypted form is over the queue's
    # _max_messages_post_size; zq counts each body as its sealed text.
    cap = 1000
    keyed.put("/v2/queues/sealed", json={FLAG: True, "_max_messages_post_size": cap})
    keyed.put("/v2/queues/plain", json={"_max_messages_post_size": cap})

    def post(queue: str, n: int):
        raw = post_body(n)
        return raw, keyed.post(f"/v2/queues/{queue}/messages", body=raw)

    def sealed_size(raw: bytes, n: int) -> int:
        return len(raw) - (n + 2) + sealed_text_length("x" * (n + 2)) + 2

    fits = max(n for n in range(600, 800) if sealed_size(post_body(n), n) <= cap)
    raw, accepted = post("sealed", fits)
    assert accepted.status_code == 201, accepted.text
    stored = storage.messages.get(keyed.project, "sealed",
                                  accepted.json["resources"][0].rsplit("/", 1)[1]).body
    assert len(stored) == sealed_text_length("x" * (fits + 2))  # the formula is the seal's
    raw, refused = post("sealed", fits + 3)  # the next base64 block: 4 bytes more
    assert len(raw) < cap and sealed_size(raw, fits + 3) > cap
    assert_error(refused, 400, "with its bodies encrypted")
    assert f"at most {cap} allowed" in refused.json["description"]
    assert post("plain", fits + 3)[1].status_code == 201  # the same post, not encrypted
