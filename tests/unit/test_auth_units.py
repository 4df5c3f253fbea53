"""Auth building blocks: configuration, tokens file and ``zq token``, signing."""

from __future__ import annotations

import json
import stat

import pytest

from zq import cli
from zq.auth import signed_urls, tokens
from zq.auth.identity import Grant
from zq.config import Config, ConfigError, load_config
from zq.errors import InvalidRequest


def test_auth_config_defaults_and_sources(tmp_path):
    config = Config()
    assert (config.auth.strategy, config.signed_urls.secret_key, config.log.format) == (
        "none", "", "auto")
    path = tmp_path / "zq.toml"
    path.write_text('[auth]\nstrategy = "token"\ntokens_file = "/etc/zq/tokens.json"\n'
                    '[signed_urls]\nsecret_key = "k"\n')
    config = load_config(path, environ={"ZQ_LOG_FORMAT": "text"})
    assert config.auth.tokens_file == "/etc/zq/tokens.json"
    assert (config.auth.strategy, config.signed_urls.secret_key, config.log.format) == (
        "token", "k", "text")


@pytest.mark.parametrize("section, values, fragment", [
    ("auth", {"strategy": "basic"}, "auth.strategy"),
    ("log", {"format": "xml"}, "log.format"),
    ("auth", {"tokens": "x"}, "unknown setting"),
])
def test_bad_auth_settings_are_config_errors(section, values, fragment):
    with pytest.raises(ConfigError, match=fragment):
        Config().with_overrides(**{section: values})


def test_issue_stores_only_a_hash_in_a_private_file(tmp_path):
    path = tmp_path / "sub" / "tokens.json"
    token_id, token = tokens.issue(path, "p1", ["Admin", "member"], "ci")
    assert token.startswith(tokens.TOKEN_PREFIX) and len(token) > 40
    text = path.read_text()
    assert token not in text
    [entry] = json.loads(text)["tokens"]
    assert entry["sha256"] == tokens.hash_token(token)
    assert (entry["id"], entry["project"], entry["roles"]) == (token_id, "p1", ["admin", "member"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    store = tokens.TokenStore(path)
    assert store.lookup(token) == tokens.TokenEntry(token_id, "p1", frozenset({"admin", "member"}))
    assert store.lookup(token + "x") is None
    assert store.lookup(entry["sha256"]) is None  # the stored hash is not a credential


def test_every_issued_token_differs(tmp_path):
    path = tmp_path / "tokens.json"
    issued = {tokens.issue(path, "p")[1] for _ in range(20)}
    assert len(issued) == 20
    assert len(json.loads(path.read_text())["tokens"]) == 20


@pytest.mark.parametrize("content", ['{"tokens": 3}', "[]", '{"tokens": [{"project": "p"}]}',
                                     '{"tokens": [{"sha256": "ab", "project": ""}]}'])
def test_malformed_tokens_files_are_refused(tmp_path, content):
    path = tmp_path / "tokens.json"
    path.write_text(content)
    with pytest.raises(tokens.TokenFileError, match=r"tokens\.json"):
        tokens.TokenStore(path)


def run_token_command(*argv: str) -> int:
    """Run ``zq token ...`` through the real command line (zq.cli.main)."""
    return cli.main(list(argv))


def test_zq_token_add_list_revoke(tmp_path, capsys):
    path = str(tmp_path / "tokens.json")
    assert run_token_command("token", "add", "--project", "P", "--role", "admin",
                             "--file", path) == 0
    out = capsys.readouterr().out
    token = out.split("token:")[1].split()[0]
    token_id = out.split("id:")[1].split()[0]
    assert tokens.TokenStore(path).lookup(token).project == "P"
    assert run_token_command("token", "list", "--file", path) == 0
    listed = capsys.readouterr().out
    assert token_id in listed and "admin" in listed and token not in listed
    assert run_token_command("token", "revoke", token_id, "--file", path) == 0
    assert tokens.TokenStore(path).lookup(token) is None
    assert run_token_command("token", "revoke", token_id, "--file", path) == 1
    assert f"No token with id '{token_id}'" in capsys.readouterr().err


def test_zq_token_file_from_configuration(tmp_path, monkeypatch, capsys):
    path = tmp_path / "tokens.json"
    config = tmp_path / "zq.toml"
    config.write_text(f'[auth]\ntokens_file = "{path}"\n')
    assert run_token_command("token", "add", "--project", "P", "--config", str(config)) == 0
    assert path.exists()
    monkeypatch.delenv("ZQ_CONFIG", raising=False)
    monkeypatch.delenv("ZQ_AUTH_TOKENS_FILE", raising=False)
    capsys.readouterr()
    assert run_token_command("token", "add", "--project", "P") == 1
    assert "pass --file" in capsys.readouterr().err


NOW = 1_700_000_000.0


def test_sign_then_verify_round_trip():
    signed = signed_urls.sign("key", "/v2/queues/q", "p", {"methods": ["post", "GET"]},
                              now=NOW, max_lifetime=86400)
    headers = {"URL-Signature": signed.signature, "URL-Expires": signed.expires,
               "URL-Methods": ",".join(reversed(signed.methods)),
               "URL-Paths": ",".join(signed.paths)}
    grant = signed_urls.verify("key", headers, "p", now=NOW)
    assert grant == Grant(("/v2/queues/q/messages",), frozenset({"GET", "POST"}),
                          NOW + 86400)
    assert grant.allows("post", "/v2/queues/q/messages/abc")
    assert not grant.allows("DELETE", "/v2/queues/q/messages")
    assert not grant.allows("GET", "/v2/queues/q/messages-other")
    with pytest.raises(signed_urls.SignatureRejected, match="does not match"):
        signed_urls.verify("other key", headers, "p", now=NOW)
    with pytest.raises(signed_urls.SignatureRejected, match="expired"):
        signed_urls.verify("key", headers, "p", now=NOW + 86400)


def test_sign_refuses_bad_documents():
    with pytest.raises(InvalidRequest, match="paths"):
        signed_urls.sign("k", "/v2/queues/q", "p", {"paths": ["../../x"]},
                         now=NOW, max_lifetime=10)
