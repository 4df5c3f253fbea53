"""The sealed body form, key rotation, keyed fingerprints and the [encryption] settings."""

from __future__ import annotations

import base64
import os

import orjson
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from zq import events
from zq.commands.config import to_toml
from zq.config import Config, ConfigError, EncryptionConfig, load_config
from zq.encryption import BodyCipher, is_sealed, key_id_of, open_body
from zq.errors import EncryptionFailure


def key(size: int = 32) -> str:
    return base64.b64encode(os.urandom(size)).decode()


K1, K2, FP = key(), key(), key()


def cipher(keys: str, active: str = "", fingerprint_key: str = FP) -> BodyCipher:
    built = BodyCipher.from_config(
        EncryptionConfig(keys=keys, active_key=active, fingerprint_key=fingerprint_key))
    assert built is not None
    return built


BODY = '{"a":1,"b":"secret"}'


def test_sealed_text_is_never_json_and_opens_to_the_body():
    one = cipher(f"k1:{K1}")
    sealed = one.seal(BODY, "p", "m1")
    assert sealed.startswith("zqe2:k1:") and is_sealed(sealed) and key_id_of(sealed) == "k1"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(sealed)
    assert "secret" not in sealed
    assert one.open(sealed, "p", "m1") == BODY
    # A fresh nonce each time: equal bodies do not give equal stored text.
    assert one.seal(BODY, "p", "m1") != sealed
    # No plaintext JSON body is ever taken for a sealed one.
    for body in ('"zqe1:k1:x"', '"zqe2:k1:x"', "{}", "[]", "1", "null", "true"):
        assert not is_sealed(body)


def test_rotation_opens_each_body_with_the_key_named_in_it():
    old = cipher(f"k1:{K1}")
    ring = cipher(f"k1:{K1},k2:{K2}", active="k2")
    sealed_old = old.seal(BODY, "p", "m1")
    sealed_new = ring.seal(BODY, "p", "m2")
    assert key_id_of(sealed_new) == "k2"
    assert ring.open(sealed_old, "p", "m1") == BODY
    assert ring.open(sealed_new, "p", "m2") == BODY


def test_a_missing_key_id_names_the_message_and_the_key():
    sealed = cipher(f"k1:{K1}").seal(BODY, "p", "m1")
    with pytest.raises(EncryptionFailure, match=r"Message m7 .*key 'k1'.*restore"):
        cipher(f"k2:{K2}").open(sealed, "p", "m7")
    with pytest.raises(EncryptionFailure, match=r"m7 .*key 'k1'.*no \[encryption\] keys"):
        open_body(None, sealed, "p", "m7")


def test_altered_text_another_message_another_project_or_another_key_do_not_open():
    one = cipher(f"k1:{K1}")
    sealed = one.seal(BODY, "p", "m1")
    prefix, encoded = sealed.rsplit(":", 1)
    raw = bytearray(base64.b64decode(encoded))
    raw[-1] ^= 1
    altered = f"{prefix}:{base64.b64encode(bytes(raw)).decode()}"
    for text, project, message_id, reader in [
        (altered, "p", "m1", one),
        (sealed, "p", "m2", one),  # copied onto another message of the project
        (sealed, "other-project", "m1", one),
        (sealed, "p", "m1", cipher(f"k1:{K2}")),
        (f"{prefix}:not base64!", "p", "m1", one),
    ]:
        with pytest.raises(EncryptionFailure, match="does not decrypt"):
            reader.open(text, project, message_id)


def legacy_seal(key_b64: str, key_id: str, body: str, project: str) -> str:
    """A body as zq sealed it before message ids were bound: zqe1, the project alone."""
    nonce = os.urandom(12)
    sealed = AESGCM(base64.b64decode(key_b64)).encrypt(nonce, body.encode(), project.encode())
    return f"zqe1:{key_id}:{base64.b64encode(nonce + sealed).decode()}"


def test_bodies_sealed_before_ids_were_bound_still_open_until_turned_off():
    legacy = legacy_seal(K1, "k1", BODY, "p")
    assert is_sealed(legacy) and key_id_of(legacy) == "k1"
    assert cipher(f"k1:{K1}").open(legacy, "p", "any-message") == BODY
    with pytest.raises(EncryptionFailure, match="does not decrypt"):
        cipher(f"k1:{K1}").open(legacy, "other-project", "m1")
    refusing = BodyCipher.from_config(EncryptionConfig(
        keys=f"k1:{K1}", fingerprint_key=FP, open_legacy_bodies=False))
    assert refusing is not None
    with pytest.raises(EncryptionFailure, match=r"m1's .*zqe1.*open_legacy_bodies = false"):
        refusing.open(legacy, "p", "m1")
    assert refusing.open(refusing.seal(BODY, "p", "m1"), "p", "m1") == BODY


def test_a_bound_body_relabelled_as_a_legacy_one_does_not_open():
    one = cipher(f"k1:{K1}")
    sealed = one.seal(BODY, "p", "m1")
    assert sealed.startswith("zqe2:")
    with pytest.raises(EncryptionFailure, match="does not decrypt"):
        one.open("zqe1:" + sealed[len("zqe2:"):], "p", "m2")


def test_fingerprints_are_keyed_and_independent_of_the_encryption_keys():
    a = cipher(f"k1:{K1}").fingerprint(BODY)
    assert len(a) == 16
    assert a != events.fingerprint(BODY)
    assert cipher(f"k2:{K2}").fingerprint(BODY) == a
    assert cipher(f"k1:{K1}", fingerprint_key=key()).fingerprint(BODY) != a


def test_no_keys_means_no_cipher():
    assert BodyCipher.from_config(EncryptionConfig()) is None


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"keys": f"k1:{key(16)}", "fingerprint_key": FP},
         "key 'k1' is 16 bytes; AES-256 needs 32"),
        ({"keys": "k1:%%%", "fingerprint_key": FP}, "key 'k1' is not valid base64"),
        ({"keys": K1, "fingerprint_key": FP}, 'expected "id:BASE64KEY,..."'),
        ({"keys": f"k1:{K1},k1:{K2}", "fingerprint_key": FP}, "'k1' appears twice"),
        ({"keys": f"k1:{K1},k2:{K2}", "fingerprint_key": FP}, "active_key must name"),
        ({"keys": f"k1:{K1}", "active_key": "k9", "fingerprint_key": FP},
         "'k9' is not one of encryption.keys"),
        ({"keys": f"k1:{K1}"}, "fingerprint_key is required"),
        ({"keys": f"k1:{K1}", "fingerprint_key": key(16)}, "16 bytes; at least 32"),
        ({"active_key": "k1"}, "need encryption.keys"),
    ],
)
def test_bad_settings_stop_the_configuration_from_loading(settings, fragment):
    environ = {f"ZQ_ENCRYPTION_{name.upper()}": value for name, value in settings.items()}
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace(".", r"\.")):
        load_config(environ=environ)


def test_keys_in_the_file_and_the_fingerprint_key_in_the_environment(tmp_path):
    path = tmp_path / "zq.toml"
    path.write_text(f'[encryption]\nkeys = "k1:{K1}"\n')
    config = load_config(path, environ={"ZQ_ENCRYPTION_FINGERPRINT_KEY": FP})
    assert BodyCipher.from_config(config.encryption) is not None
    with pytest.raises(ConfigError, match="fingerprint_key is required"):
        load_config(path, environ={})


def test_zq_config_shows_key_ids_but_never_the_keys():
    config = Config().with_overrides(
        encryption={"keys": f"k1:{K1},k2:{K2}", "active_key": "k2", "fingerprint_key": FP})
    text = to_toml(config)
    assert 'keys = "k1:***,k2:***"' in text
    assert 'fingerprint_key = "***"' in text
    assert 'active_key = "k2"' in text
    for secret in (K1, K2, FP):
        assert secret not in text
