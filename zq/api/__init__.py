"""The HTTP API (falcon): Zaqar v2 routes over the service layer."""

from zq.api.app import create_app

__all__ = ["create_app"]
