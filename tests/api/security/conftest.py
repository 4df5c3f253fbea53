"""Fixtures of the security tests: an app under token auth with projects A and B."""

from __future__ import annotations

import sys
import types
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import falcon
import pytest

from tests.api.helpers import Api
from zq.api import create_app
from zq.auth import tokens
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage

SECRET_KEY = "test-signing-key-0123456789abcdef"


class TokenApi(Api):
    """An Api client that authenticates with a bearer token and sends no X-Project-ID."""

    def __init__(self, app: Any, project: str, token: str) -> None:
        super().__init__(app, project)
        self.token = token
        self.sent: list[str] = []  # every path and query string requested

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.sent.append(path + "?" + str(kwargs.get("params") or ""))
        return super().request(method, path, **kwargs)

    def headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"Client-ID": self.client_id, "X-Auth-Token": self.token}
        headers.update(extra or {})
        return headers


@dataclass
class Tenants:
    """Two projects with one token each, and an admin token of project A."""

    app: falcon.App
    a: TokenApi
    b: TokenApi
    admin: TokenApi
    tokens_file: Path


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    return tmp_path / "tokens.json"


@pytest.fixture
def token_config(tokens_file: Path) -> Config:
    return Config().with_overrides(
        auth={"strategy": "token", "tokens_file": str(tokens_file)},
        signed_urls={"secret_key": SECRET_KEY},
    )


@pytest.fixture
def tenants(tokens_file: Path, token_config: Config, storage: Storage,
            clock: ManualClock) -> Tenants:
    suffix = uuid.uuid4().hex[:12]
    project_a, project_b = f"a-{suffix}", f"b-{suffix}"
    _, token_a = tokens.issue(tokens_file, project_a, ["member"])
    _, token_b = tokens.issue(tokens_file, project_b, ["member"])
    _, token_admin = tokens.issue(tokens_file, project_a, ["admin"])
    app = create_app(token_config, storage=storage, clock=clock)
    return Tenants(
        app, TokenApi(app, project_a, token_a), TokenApi(app, project_b, token_b),
        TokenApi(app, project_a, token_admin), tokens_file,
    )


class FakeAuthProtocol:
    """Stands in for keystonemiddleware.auth_token.AuthProtocol: token "good" is valid.

    Like the real one it strips the identity headers a client sent and sets
    its own (X-Identity-Status, X-Project-Id, X-Roles).
    """

    instances: list[FakeAuthProtocol] = []

    def __init__(self, app, conf):
        self.app, self.conf = app, dict(conf)
        FakeAuthProtocol.instances.append(self)

    def __call__(self, environ, start_response):
        for key in ("HTTP_X_IDENTITY_STATUS", "HTTP_X_PROJECT_ID", "HTTP_X_ROLES"):
            environ.pop(key, None)
        if environ.get("HTTP_X_AUTH_TOKEN") != "good":
            start_response("401 Unauthorized", [("Content-Type", "application/json")])
            return [b'{"title": "Unauthorized", "description": "keystone said no"}']
        environ.update(HTTP_X_IDENTITY_STATUS="Confirmed", HTTP_X_PROJECT_ID="ks-project",
                       HTTP_X_ROLES="reader,admin")
        return self.app(environ, start_response)


@pytest.fixture
def fake_keystonemiddleware(monkeypatch):
    package = types.ModuleType("keystonemiddleware")
    auth_token = types.ModuleType("keystonemiddleware.auth_token")
    auth_token.AuthProtocol = FakeAuthProtocol
    package.auth_token = auth_token
    monkeypatch.setitem(sys.modules, "keystonemiddleware", package)
    monkeypatch.setitem(sys.modules, "keystonemiddleware.auth_token", auth_token)
    FakeAuthProtocol.instances.clear()
