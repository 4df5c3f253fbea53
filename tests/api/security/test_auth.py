"""Authentication strategies: none, token and keystone; the admin role."""

from __future__ import annotations

import sys
import uuid

import falcon.testing
import pytest

from tests.api.helpers import Api, assert_error
from tests.api.security.conftest import FakeAuthProtocol, TokenApi
from zq.api import create_app
from zq.auth import check_config, tokens
from zq.config import Config, ConfigError

# -- strategy = "none" (the default) ------------------------------------------


def test_none_trusts_project_and_roles_headers(api):
    api.post_messages("q", {"body": 1})
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 1
    assert_error(api.get("/v2/health", headers={"X-Roles": "member"}), 403, "admin")
    assert api.get("/v2/health", headers={"X-Roles": "member, Admin"}).status_code == 200


# -- strategy = "token" ---------------------------------------------------------


def test_missing_token_is_401_with_a_challenge(tenants):
    client = falcon.testing.TestClient(tenants.app)
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": tenants.a.project}
    result = client.simulate_get("/v2/queues", headers=headers)
    assert_error(result, 401, "token")
    assert result.headers["WWW-Authenticate"].startswith("Bearer")


def test_unknown_token_is_401(tenants):
    forged = TokenApi(tenants.app, tenants.a.project, tokens.TOKEN_PREFIX + "x" * 43)
    assert_error(forged.get("/v2/queues"), 401, "unknown")


def test_token_by_either_header_acts_in_its_project(tenants):
    tenants.a.post_messages("q", {"body": "a"})
    bearer = Api(tenants.app, tenants.a.project).client.simulate_get(
        "/v2/queues/q/stats",
        headers={"Client-ID": str(uuid.uuid4()),
                 "Authorization": f"Bearer {tenants.a.token}"},
    )
    assert bearer.status_code == 200
    assert bearer.json["messages"]["total"] == 1
    assert tenants.b.get("/v2/queues/q/stats").json["messages"]["total"] == 0


def test_a_member_forces_its_queues_breaker_as_it_writes_its_metadata(tenants, storage):
    # As a metadata write: any identity of the project, the admin role not needed.
    assert tenants.a.put("/v2/queues/q", json={"_breaker_failure_ratio": 0.5}).status_code == 201
    forced = tenants.a.post("/v2/queues/q/breaker", json={"state": "open"})
    if storage.has_breaker:
        assert forced.status_code == 204, forced.text
        assert tenants.a.get("/v2/queues/q/stats").json["breaker"]["state"] == "open"
    else:
        assert_error(forced, 409, "runs no breaker")
    # Another project's member does not even see it (its own "q" does not exist).
    assert_error(tenants.b.post("/v2/queues/q/breaker", json={"state": "closed"}), 404)
    anonymous = Api(tenants.app, tenants.a.project)
    assert anonymous.post("/v2/queues/q/breaker", json={"state": "closed"}).status_code == 401


def test_project_header_must_match_the_token(tenants):
    same = tenants.a.get("/v2/queues", headers={"X-Project-ID": tenants.a.project})
    assert same.status_code == 200
    other = tenants.a.get("/v2/queues", headers={"X-Project-ID": tenants.b.project})
    assert_error(other, 403, "X-Project-ID")


def test_roles_come_from_the_token_not_from_x_roles(tenants):
    assert_error(tenants.a.get("/v2/health", headers={"X-Roles": "admin"}), 403, "admin")
    assert tenants.admin.get("/v2/health").status_code == 200


def test_home_document_needs_no_token(tenants):
    assert falcon.testing.TestClient(tenants.app).simulate_get("/v2").status_code == 200


def test_tokens_added_or_revoked_while_running_take_effect(tenants):
    token_id, token = tokens.issue(tenants.tokens_file, "late", [])
    late = TokenApi(tenants.app, "late", token)
    assert late.get("/v2/queues").status_code == 200
    assert tokens.revoke(tenants.tokens_file, token_id)
    assert_error(late.get("/v2/queues"), 401)


def test_deleted_tokens_file_revokes_everything(tenants):
    tenants.tokens_file.unlink()
    assert_error(tenants.a.get("/v2/queues"), 401)


def test_broken_tokens_file_is_503_not_500(tenants):
    tenants.tokens_file.write_text("{not json")
    assert_error(tenants.a.get("/v2/queues"), 503, "tokens file")


def test_token_strategy_needs_an_existing_tokens_file(storage, clock, tmp_path):
    config = Config().with_overrides(auth={"strategy": "token"})
    with pytest.raises(ConfigError, match="tokens_file"):
        create_app(config, storage=storage, clock=clock)
    config = config.with_overrides(auth={"tokens_file": str(tmp_path / "none.json")})
    with pytest.raises(ConfigError, match="does not exist"):
        create_app(config, storage=storage, clock=clock)


# -- strategy = "keystone" ------------------------------------------------------


def keystone_config(**auth):
    return Config().with_overrides(auth={"strategy": "keystone", **auth},
                                   signed_urls={"secret_key": "k"})


def test_keystone_wraps_the_app_and_honours_its_headers(
    fake_keystonemiddleware, storage, clock
):
    app = create_app(keystone_config(keystone_config_file="/etc/zq/ks.conf"),
                     storage=storage, clock=clock)
    [protocol] = FakeAuthProtocol.instances
    assert protocol.conf == {"oslo_config_project": "zq",
                             "oslo_config_file": "/etc/zq/ks.conf"}
    client = falcon.testing.TestClient(app)
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "spoofed",
               "X-Roles": "admin"}
    assert client.simulate_get("/v2/queues", headers=headers).status_code == 401
    headers["X-Auth-Token"] = "good"
    posted = client.simulate_post("/v2/queues/q/messages", headers=headers,
                                  json={"messages": [{"body": 1}]})
    assert posted.status_code == 201
    assert client.simulate_get("/v2/health", headers=headers).status_code == 200
    ks = Api(app, "ks-project")
    assert ks.get("/v2/queues/q/stats").status_code == 401  # no token: never reaches zq
    spoofed = Api(app, "spoofed").get("/v2/queues/q/stats", headers={"X-Auth-Token": "good"})
    assert spoofed.json["messages"]["total"] == 1  # counted in ks-project, not "spoofed"


def test_keystone_lets_the_console_page_through_but_not_its_api_calls(
    fake_keystonemiddleware, storage, clock
):
    app = create_app(keystone_config(), storage=storage, clock=clock)
    client = falcon.testing.TestClient(app)
    page = client.simulate_get("/console")
    assert page.status_code == 200
    assert '<meta name="zq-auth" content="keystone">' in page.text
    assert client.simulate_get("/console/static/api.js").status_code == 200
    assert Api(app, "p").get("/v2/queues").status_code == 401  # the API still needs a token
    assert client.simulate_get("/consoles").status_code == 401  # only the console's paths


def test_keystone_status_other_than_confirmed_is_401(storage, clock):
    # delay_auth_decision lets invalid tokens through marked "Invalid": zq refuses them.
    from zq.api.app import build_app  # the falcon app without the keystone wrapper
    from zq.pooling import SingleBackend
    from zq.service import QueueService

    config = keystone_config()
    app = build_app(QueueService(config.limits, SingleBackend(storage)), clock, config)
    result = Api(app, "p").get("/v2/queues", headers={"X-Identity-Status": "Invalid"})
    assert_error(result, 401, "Keystone")


def test_keystone_without_keystonemiddleware_is_a_clear_startup_error(
    monkeypatch, storage, clock
):
    monkeypatch.setitem(sys.modules, "keystonemiddleware", None)  # import fails
    with pytest.raises(ConfigError, match=r"pip install 'zq\[keystone\]'"):
        create_app(keystone_config(), storage=storage, clock=clock)
    with pytest.raises(ConfigError, match=r"pip install 'zq\[keystone\]'"):
        check_config(keystone_config())


def test_check_config_reads_the_tokens_file_before_serving(tmp_path):
    config = Config().with_overrides(
        auth={"strategy": "token", "tokens_file": str(tmp_path / "missing.json")})
    with pytest.raises(ConfigError, match="does not exist"):
        check_config(config)
    tokens.issue(tmp_path / "missing.json", "p")
    check_config(config)
    check_config(Config())


def test_real_keystonemiddleware_refuses_requests_without_a_token(storage, clock, tmp_path):
    pytest.importorskip("keystonemiddleware.auth_token")
    conf = tmp_path / "zq.conf"
    conf.write_text("[keystone_authtoken]\nwww_authenticate_uri = http://127.0.0.1:1/v3\n"
                    "auth_url = http://127.0.0.1:1/v3\n")
    app = create_app(keystone_config(keystone_config_file=str(conf)),
                     storage=storage, clock=clock)
    result = Api(app, "p").get("/v2/queues", headers={"X-Identity-Status": "Confirmed",
                                                       "X-Roles": "admin"})
    assert result.status_code == 401
