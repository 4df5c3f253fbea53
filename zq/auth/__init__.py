"""Authentication and authorization: who a request comes from and what it may do.

- identity.py: ``Identity`` (project, roles) and ``Grant`` (a signed URL's scope)
- middleware.py: ``Authenticate``, the falcon middleware deciding the identity
  once per request, and ``require_admin``, the hook of admin endpoints
- tokens.py: the hashed tokens file and ``zq token``
- signed_urls.py: signing and verifying Zaqar's pre-signed URLs
- keystone.py: wrapping the app with keystonemiddleware
"""

from zq.auth.identity import Grant, Identity
from zq.auth.middleware import Authenticate, require_admin

__all__ = ["Authenticate", "Grant", "Identity", "require_admin"]
