"""``_enable_encrypt_messages`` over HTTP: shown, validated, refused without keys."""

from __future__ import annotations

import base64
import os

import pytest

from tests.api.helpers import Api, assert_error
from zq.api import create_app
from zq.config import Config
from zq.encryption import is_sealed

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
        other.get("/v2/queues/q/messages", params={"echo": "true"}),
        other.delete("/v2/queues/q/messages", params={"pop": 1}),
    ):
        assert_error(result, 500, f"Message {message_id} was encrypted with key 'k1'")
        assert result.json["title"] == "Message encryption failed"
    # Nothing was lost: the server with the key still reads it.
    assert keyed.get(f"/v2/queues/q/messages/{message_id}").json["body"] == "hello"
