"""Keystone authentication through keystonemiddleware (``pip install 'zq[keystone]'``).

keystonemiddleware's ``auth_token`` wraps the WSGI app: it validates the
token with Keystone, strips identity headers the client sent and sets
``X-Identity-Status``, ``X-Project-Id`` and ``X-Roles`` for
zq.auth.middleware to read. Requests carrying a pre-signed URL
(``URL-Signature``) bypass it, as in Zaqar: their signature is their
credential, checked by zq.auth.middleware, and they never get roles. The
operator console's page and files (``/console``) bypass it too: they hold
no data, and the page's API calls carry the Keystone token the operator
types, checked here like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from zq.config import AuthConfig, ConfigError
from zq.console import is_console_path

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

SIGNATURE_ENVIRON_KEY = "HTTP_URL_SIGNATURE"
OSLO_PROJECT = "zq"  # oslo.config looks for /etc/zq/zq.conf when no file is given


def auth_token_module() -> Any:
    """keystonemiddleware.auth_token; ConfigError when it is not installed."""
    try:
        from keystonemiddleware import auth_token
    except ImportError as exc:
        raise ConfigError(
            'auth.strategy = "keystone" needs keystonemiddleware: '
            "pip install 'zq[keystone]'."
        ) from exc
    return auth_token


def wrap(app: WsgiApp, config: AuthConfig) -> WsgiApp:
    """``app`` behind keystonemiddleware's auth_token; ConfigError when it is missing."""
    auth_token = auth_token_module()
    conf: dict[str, Any] = {"oslo_config_project": OSLO_PROJECT}
    if config.keystone_config_file:
        conf["oslo_config_file"] = config.keystone_config_file
    protected = auth_token.AuthProtocol(app, conf)
    return SignedUrlBypass(app, protected)


class SignedUrlBypass:
    """Send pre-signed requests straight to the app, every other one through Keystone."""

    def __init__(self, app: WsgiApp, protected: WsgiApp) -> None:
        self.app = app
        self.protected = protected

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if SIGNATURE_ENVIRON_KEY in environ or is_console_path(environ.get("PATH_INFO", "")):
            return self.app(environ, start_response)
        return self.protected(environ, start_response)
