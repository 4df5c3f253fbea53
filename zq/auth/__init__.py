"""Authentication and authorization: who a request comes from and what it may do.

- identity.py: ``Identity`` (project, roles) and ``Grant`` (a signed URL's scope)
- middleware.py: ``Authenticate``, the falcon middleware deciding the identity
  once per request, and ``require_admin``, the hook of admin endpoints
- tokens.py: the hashed tokens file and ``zq token``
- signed_urls.py: signing and verifying Zaqar's pre-signed URLs
- keystone.py: wrapping the app with keystonemiddleware
"""

from zq.auth import keystone
from zq.auth.identity import Grant, Identity
from zq.auth.middleware import Authenticate, require_admin
from zq.clock import SystemClock
from zq.config import Config


def check_config(config: Config) -> None:
    """Raise ConfigError for auth settings the app would refuse, before any worker starts."""
    if config.auth.strategy == "token":
        Authenticate(config, SystemClock())  # reads the tokens file
    elif config.auth.strategy == "keystone":
        keystone.auth_token_module()


__all__ = ["Authenticate", "Grant", "Identity", "check_config", "require_admin"]
