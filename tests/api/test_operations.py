"""Ping and health."""

from __future__ import annotations

from tests.api.helpers import assert_error


def test_ping(api):
    assert api.get("/v2/ping").status_code == 204
    assert api.head("/v2/ping").status_code == 204


def test_ping_fails_when_storage_is_unreachable(api, storage, monkeypatch):
    monkeypatch.setattr(storage, "ping", lambda: False)
    assert_error(api.get("/v2/ping"), 503, "unreachable")
    assert api.head("/v2/ping").status_code == 503


def test_a_lost_backend_is_a_503_with_retry_after(api, storage, monkeypatch):
    """A failover in flight: the client is told to come back, never given a 500."""
    from zq.errors import BACKEND_UNREACHABLE, StorageUnavailable

    def lost(*args, **kwargs):
        raise StorageUnavailable(BACKEND_UNREACHABLE, detail="connection lost")

    api.put("/v2/queues/q")
    monkeypatch.setattr(storage.messages, "post", lost)
    result = api.post("/v2/queues/q/messages", json={"messages": [{"body": 1, "ttl": 60}]})
    assert_error(result, 503, "failing over")
    assert "connection lost" not in result.text
    assert int(result.headers["Retry-After"]) >= 1
    assert api.get("/v2/ping").headers.get("Retry-After") is None
    monkeypatch.setattr(storage, "ping", lambda: False)
    assert api.get("/v2/ping").headers["Retry-After"] == "1"


def test_health_is_admin_only(api):
    assert_error(api.get("/v2/health"), 403, "admin")
    assert_error(api.get("/v2/health", headers={"X-Roles": "member"}), 403)


def test_health_reports_storage(api, storage, monkeypatch):
    result = api.get("/v2/health", headers={"X-Roles": "member,admin"})
    assert result.status_code == 200
    assert result.json["storage_reachable"] is True
    status = result.json["operation_status"]
    assert set(status) == {"list_queues", "queue_stats", "list_messages"}
    assert all(op["succeeded"] for op in status.values())
    monkeypatch.setattr(storage, "ping", lambda: False)
    down = api.get("/v2/health", headers={"X-Roles": "admin"}).json
    assert down == {"storage_reachable": False, "operation_status": {}}


def test_identity_tells_the_caller_its_project_and_roles(api):
    """What the console asks instead of trying /v2/health and reading a 403."""
    member = api.get("/v2/identity")
    assert member.status_code == 200
    assert member.json == {"project": api.project, "roles": [], "admin": False}
    admin = api.get("/v2/identity", headers={"X-Roles": "Member, admin"})
    assert admin.json == {"project": api.project, "roles": ["admin", "member"], "admin": True}
    home = api.get("/v2").json["resources"]
    assert home["rel/identity"]["href"] == "/v2/identity"
