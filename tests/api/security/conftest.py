"""Fixtures of the security tests: an app under token auth with projects A and B."""

from __future__ import annotations

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
