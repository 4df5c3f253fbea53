"""The one place that decides who a request comes from.

``Authenticate`` runs once per ``/v2/...`` request (and per request of an
operator endpoint, OPERATOR_PATHS, when a strategy other than ``none`` is on) and sets
``req.context.identity`` (project, roles, how it was established) and
``req.context.project``; resources and hooks read only those.

A request carrying ``URL-Signature`` is authenticated by its pre-signed URL
whatever the strategy, and only for the paths and methods it was signed
for. Otherwise ``[auth] strategy`` decides:

- ``none``: ``X-Project-ID`` names the project and ``X-Roles`` the roles,
  trusted as sent (for local use, or behind a gateway that sets them);
- ``token``: a bearer token (``X-Auth-Token`` or ``Authorization: Bearer``)
  from the tokens file gives both; ``X-Project-ID`` must be absent or
  equal the token's project and ``X-Roles`` is ignored;
- ``keystone``: keystonemiddleware (wrapped around the app by
  zq.auth.keystone) validated the token and set ``X-Identity-Status``,
  ``X-Project-Id`` and ``X-Roles``, replacing whatever the client sent.
"""

from __future__ import annotations

from typing import Any

import falcon

from zq import validation
from zq.auth import signed_urls
from zq.auth.identity import Identity, parse_roles
from zq.auth.tokens import TokenFileError, TokenStore
from zq.bounded_memo import BoundedMemo
from zq.clock import Clock
from zq.config import Config, ConfigError

# Every route below it needs an identity; ``GET /v2`` (the home document) does not.
API_PREFIX = "/v2/"
# Operator endpoints outside the API: open with strategy "none" (a scraper
# has no project to send), for admin identities only with any other.
OPERATOR_PATHS = frozenset({"/metrics"})

TOKEN_HEADER = "X-Auth-Token"
BEARER = "bearer "
# Identities built from X-Project-ID and X-Roles (strategies "none" and
# "keystone"), by (header values, strategy): a client sends the same ones on
# every request, and checking the project id and parsing the roles cost
# 2 us a request (a lookup 0.1).
HEADER_IDENTITIES_KEPT = 4096


def _unauthorized(description: str) -> falcon.HTTPUnauthorized:
    return falcon.HTTPUnauthorized(
        title="Unauthorized", description=description, challenges=['Bearer realm="zq"']
    )


def _forbidden(description: str) -> falcon.HTTPForbidden:
    return falcon.HTTPForbidden(title="Forbidden", description=description)


class Authenticate:
    """falcon middleware establishing ``req.context.identity`` and ``.project``."""

    def __init__(self, config: Config, clock: Clock) -> None:
        self.strategy = config.auth.strategy
        self.limits = config.limits
        self.secret_key = config.signed_urls.secret_key
        self.clock = clock
        self.tokens: TokenStore | None = None
        if self.strategy == "token":
            if not config.auth.tokens_file:
                raise ConfigError(
                    'auth.strategy = "token" needs auth.tokens_file (create it with '
                    "`zq token add --file FILE --project P`)."
                )
            self.tokens = TokenStore(config.auth.tokens_file)
        self._header_identities = BoundedMemo(self._parse_header_identity,
                                              HEADER_IDENTITIES_KEPT)

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not req.path.startswith(API_PREFIX) and (
            req.path not in OPERATOR_PATHS or self.strategy == "none"
        ):
            return
        if req.get_header(signed_urls.HEADERS[0]) is not None:
            identity = self._signed(req)
        elif self.strategy == "token":
            identity = self._token(req)
        elif self.strategy == "keystone":
            identity = self._keystone(req)
        else:
            identity = self._trusted(req)
        req.context.identity = identity
        req.context.project = identity.project

    def _project_header(self, req: falcon.Request) -> str:
        return validation.project_id(req.get_header("X-Project-ID"), self.limits)

    def _trusted(self, req: falcon.Request) -> Identity:
        return self._header_identity(req, "none")

    def _header_identity(self, req: falcon.Request, method: str) -> Identity:
        """The identity X-Project-ID and X-Roles name (frozen: one per pair is shared)."""
        key = (req.get_header("X-Project-ID"), req.get_header("X-Roles"), method)
        identity = self._header_identities.kept.get(key)
        if identity is None:
            identity = self._header_identities.remember(key)
        return identity

    def _parse_header_identity(self, key: tuple[str | None, str | None, str]) -> Identity:
        project, roles, method = key
        return Identity(validation.project_id(project, self.limits), parse_roles(roles), method)

    def _token(self, req: falcon.Request) -> Identity:
        token = req.get_header(TOKEN_HEADER)
        authorization = req.get_header("Authorization") or ""
        if not token and authorization[: len(BEARER)].lower() == BEARER:
            token = authorization[len(BEARER):].strip()
        if not token:
            raise _unauthorized(
                f"This server needs a token: send {TOKEN_HEADER}: TOKEN or "
                "Authorization: Bearer TOKEN."
            )
        assert self.tokens is not None
        try:
            entry = self.tokens.lookup(token)
        except TokenFileError:
            raise falcon.HTTPServiceUnavailable(
                title="Service unavailable",
                description="The server cannot read its tokens file; try again later.",
            ) from None
        if entry is None:
            raise _unauthorized("The token is unknown or has been revoked.")
        claimed = req.get_header("X-Project-ID")
        if claimed is not None and claimed != entry.project:
            raise _forbidden("X-Project-ID does not match the project of the token.")
        return Identity(entry.project, entry.roles, "token")

    def _keystone(self, req: falcon.Request) -> Identity:
        if req.get_header("X-Identity-Status") != "Confirmed":
            raise _unauthorized("A valid Keystone token (X-Auth-Token) is required.")
        return self._header_identity(req, "keystone")

    def _signed(self, req: falcon.Request) -> Identity:
        if not self.secret_key:
            raise _forbidden("Pre-signed URLs are not enabled on this server.")
        project = self._project_header(req)
        try:
            headers = {name: req.get_header(name) for name in signed_urls.HEADERS}
            grant = signed_urls.verify(self.secret_key, headers, project, now=self.clock.now())
        except signed_urls.SignatureRejected as exc:
            raise _forbidden(str(exc)) from None
        if not grant.allows(req.method, req.path):
            raise _forbidden(
                f"The URL signature does not allow {req.method} on {req.path}."
            )
        return Identity(project, frozenset(), "signed-url", grant)


def require_admin(req: falcon.Request, resp: falcon.Response, resource: Any, params: Any) -> None:
    """falcon hook: only identities holding the admin role may pass (403)."""
    identity: Identity | None = getattr(req.context, "identity", None)
    if identity is None or not identity.is_admin:
        raise _forbidden("This operation requires the admin role.")
