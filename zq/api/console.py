"""``GET /console``: the operator console, static files served by zq itself.

The page holds no data: it is the same for everyone and needs no identity
(the middleware leaves these paths alone). Everything it shows it fetches
from the public ``/v2`` API with the token or project the operator types,
sent as headers, never as a cookie, so there is nothing for a cross-site
request to ride on. Every response carries a Content-Security-Policy that
allows scripts, styles and requests from this origin only: no inline
script or style, no plugin, no framing.
"""

from __future__ import annotations

from importlib import resources

import falcon

from zq.console import CONSOLE_PATH, is_console_path

ASSET_ROUTE = CONSOLE_PATH + "/static/{name}"
INDEX = "index.html"

CSP = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
])
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # Small files, changed by upgrades: revalidate rather than run an old script.
    "Cache-Control": "no-cache",
}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Where the page learns how to sign in: a meta tag, not an inline script.
AUTH_PLACEHOLDER = "{{auth}}"


def load_assets() -> dict[str, bytes]:
    """Every file of zq/console/static by name, read once (the wheel ships them)."""
    folder = resources.files("zq.console") / "static"
    return {
        entry.name: entry.read_bytes()
        for entry in folder.iterdir()
        if entry.is_file() and _suffix(entry.name) in CONTENT_TYPES
    }


def _suffix(name: str) -> str:
    return name[name.rfind("."):] if "." in name else ""


def _send(resp: falcon.Response, name: str, data: bytes) -> None:
    resp.content_type = CONTENT_TYPES[_suffix(name)]
    resp.set_headers(SECURITY_HEADERS)
    resp.data = data


class ConsolePage:
    """``GET /console``: the page, told which sign-in the server's auth strategy needs."""

    def __init__(self, assets: dict[str, bytes], auth_strategy: str) -> None:
        self.page = assets[INDEX].replace(AUTH_PLACEHOLDER.encode(), auth_strategy.encode())

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _send(resp, INDEX, self.page)


class ConsoleAsset:
    """``GET /console/static/{name}``: one of the console's files, by exact name."""

    def __init__(self, assets: dict[str, bytes]) -> None:
        self.assets = {name: data for name, data in assets.items() if name != INDEX}

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        data = self.assets.get(name)
        if data is None:
            raise falcon.HTTPNotFound(
                title="Not found", description=f"The console has no file {name!r}."
            )
        _send(resp, name, data)


__all__ = ["CONSOLE_PATH", "install", "is_console_path"]


def install(app: falcon.App, auth_strategy: str) -> None:
    """Add the console's routes to ``app``."""
    assets = load_assets()
    app.add_route(CONSOLE_PATH, ConsolePage(assets, auth_strategy))
    app.add_route(ASSET_ROUTE, ConsoleAsset(assets))


