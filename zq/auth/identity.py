"""Who a request comes from, decided once per request by zq.auth.middleware."""

from __future__ import annotations

from dataclasses import dataclass

ADMIN_ROLE = "admin"


@dataclass(frozen=True, slots=True)
class Grant:
    """What a pre-signed URL allows: these methods on these paths (or below them)."""

    paths: tuple[str, ...]
    methods: frozenset[str]
    expires: float  # POSIX seconds

    def allows(self, method: str, path: str) -> bool:
        """Whether ``method path`` is covered by this grant."""
        if method.upper() not in self.methods:
            return False
        return any(path == p or path.startswith(p + "/") for p in self.paths)


@dataclass(frozen=True, slots=True)
class Identity:
    """The project a request acts in, its roles, and how that was established."""

    project: str
    roles: frozenset[str]
    method: str  # "none", "token", "keystone" or "signed-url"
    grant: Grant | None = None  # set for signed-url requests only

    @property
    def is_admin(self) -> bool:
        return ADMIN_ROLE in self.roles


def parse_roles(header: str | None) -> frozenset[str]:
    """Roles from a comma separated header such as X-Roles, lower-cased."""
    return frozenset(
        r.strip().lower() for r in (header or "").split(",") if r.strip()
    )
