"""``GET /v2/identity``: what the request's credentials stand for.

A client (the console) asks what it may do instead of trying an admin
route and reading a 403: the project, the roles, and whether they include
admin. It tells the caller only about itself, so any identity may ask.
"""

from __future__ import annotations

import falcon

from zq.auth.identity import Identity

IDENTITY_PATH = "/v2/identity"


class IdentityResource:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        identity: Identity = req.context.identity
        resp.media = {"project": identity.project, "roles": sorted(identity.roles),
                      "admin": identity.is_admin}
