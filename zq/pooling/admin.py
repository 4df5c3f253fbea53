"""Pool and flavor administration: what the admin API calls.

Checks request documents (names, fields, types), probes a pool's URI with
the driver's ping before registering it, and leaves every rule about the
stored state to the registry's transactions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from zq import validation
from zq.clock import Clock, SystemClock
from zq.config import Limits
from zq.errors import InvalidRequest
from zq.pooling.registry import FlavorDef, PoolDef, Registry
from zq.pooling.schema import URI
from zq.storage import check_shareable, check_uri, open_storage
from zq.storage.uri import redact, scrub

POOL_FIELDS = ("uri", "weight", "flavor", "options")
FLAVOR_FIELDS = ("pool_list", "capabilities")
MAX_WEIGHT = 2**31 - 1

log = logging.getLogger(__name__)

Probe = Callable[[str], str | None]  # uri -> None when reachable, else why not


def ping_probe(clock: Clock | None = None) -> Probe:
    """A probe that opens the backend and pings it (the driver's own check)."""

    def probe(uri: str) -> str | None:
        try:
            storage = open_storage(uri, clock=clock or SystemClock())
        except Exception as error:
            return _cause(error, uri)
        try:
            return None if storage.ping() else "it does not answer a ping"
        finally:
            storage.close()

    return probe


def _cause(error: Exception, uri: str) -> str:
    """Why opening ``uri`` failed, on one line, for the admin: the driver's own
    error (``detail``: "connection refused", "password authentication
    failed"...) after zq's description, the URI's password hidden."""
    description = str(getattr(error, "description", None) or error)
    detail = str(getattr(error, "detail", "") or "")
    text = f"{description.rstrip('.')}: {detail}" if detail else description
    return scrub(" ".join(line.strip() for line in text.splitlines() if line.strip()), uri)


class PoolAdmin:
    """Register, change, list and remove pools and flavors."""

    def __init__(
        self, registry: Registry, limits: Limits, probe: Probe, *, processes: int = 1
    ) -> None:
        self.registry = registry
        self.limits = limits
        self._probe = probe
        self._processes = processes  # server worker processes sharing the pools

    # -- pools ----------------------------------------------------------

    def put_pool(self, name: str, document: Any) -> None:
        """Register or overwrite pool ``name`` from ``{"uri", "weight", "flavor"?, "options"?}``."""
        name = validation.name(name, field="Pool name")
        fields = _fields(document, POOL_FIELDS, "The pool")
        missing = [k for k in ("uri", "weight") if k not in fields]
        if missing:
            raise InvalidRequest(f"The pool needs {' and '.join(missing)}.")
        checked = _pool_fields(fields)
        self._check_reachable(checked["uri"])
        self.registry.put_pool(PoolDef(
            name, checked["uri"], checked["weight"], checked.get("flavor"),
            checked.get("options") or {},
        ))

    def get_pool(self, name: str) -> PoolDef:
        return self.registry.get_pool(validation.name(name, field="Pool name"))

    def update_pool(self, name: str, document: Any) -> PoolDef:
        """Change some fields of a pool; a new URI is probed first."""
        name = validation.name(name, field="Pool name")
        fields = _known_fields(document, POOL_FIELDS, "The pool patch")
        if not fields:
            raise InvalidRequest(f"The pool patch needs at least one of {list(POOL_FIELDS)}.")
        checked = _pool_fields(fields)
        if "uri" in checked and checked["uri"] != self.registry.get_pool(name).uri:
            self._check_reachable(checked["uri"])
        return self.registry.update_pool(name, checked)

    def delete_pool(self, name: str) -> None:
        self.registry.remove_pool(validation.name(name, field="Pool name"))

    def list_pools(self, marker: str | None, limit: int | None) -> list[PoolDef]:
        return self.registry.list_pools(
            marker=validation.listing_name(marker, "marker"), limit=self._page(limit)
        )

    # -- flavors --------------------------------------------------------

    def put_flavor(self, name: str, document: Any) -> None:
        """Create or overwrite flavor ``name`` from ``{"pool_list": [...], "capabilities"?}``."""
        name = validation.name(name, field="Flavor name")
        fields = _fields(document, FLAVOR_FIELDS, "The flavor")
        if "pool_list" not in fields:
            raise InvalidRequest("The flavor needs a pool_list.")
        checked = _flavor_fields(fields)
        self.registry.put_flavor(
            FlavorDef(name, checked["pool_list"], checked.get("capabilities") or {})
        )

    def get_flavor(self, name: str) -> FlavorDef:
        return self.registry.get_flavor(validation.name(name, field="Flavor name"))

    def update_flavor(self, name: str, document: Any) -> FlavorDef:
        name = validation.name(name, field="Flavor name")
        fields = _known_fields(document, FLAVOR_FIELDS, "The flavor patch")
        if not fields:
            raise InvalidRequest(
                f"The flavor patch needs at least one of {list(FLAVOR_FIELDS)}."
            )
        return self.registry.update_flavor(name, _flavor_fields(fields))

    def delete_flavor(self, name: str) -> None:
        self.registry.remove_flavor(validation.name(name, field="Flavor name"))

    def list_flavors(self, marker: str | None, limit: int | None) -> list[FlavorDef]:
        return self.registry.list_flavors(
            marker=validation.listing_name(marker, "marker"), limit=self._page(limit)
        )

    # -- helpers --------------------------------------------------------

    def _page(self, limit: int | None) -> int:
        return validation.limit(
            self.limits.default_page_size if limit is None else limit,
            self.limits.max_queues_per_page,
        )

    def _check_reachable(self, uri: str) -> None:
        check_shareable(uri, self._processes)
        problem = self._probe(uri)
        if problem is not None:
            log.warning("pool URI %s is unreachable: %s", redact(uri), problem)
            raise InvalidRequest(f"Pool URI {redact(uri)} is unreachable: {problem}")


def _fields(document: Any, known: tuple[str, ...], what: str) -> dict[str, Any]:
    fields = validation.object_document(document, what)
    validation.refuse_unknown(fields, known, lambda unknown: (
        f"{what} has unknown fields {unknown}; known: {list(known)}."))
    return fields


def _known_fields(document: Any, known: tuple[str, ...], what: str) -> dict[str, Any]:
    """A PATCH's fields that the resource has; others are ignored, as Zaqar does."""
    fields = validation.object_document(document, what)
    return {k: v for k, v in fields.items() if k in known}


def _pool_fields(fields: dict[str, Any]) -> dict[str, Any]:
    checked = dict(fields)
    if "uri" in fields:
        uri = fields["uri"]
        if not isinstance(uri, str) or "://" not in uri or len(uri) > URI:
            raise InvalidRequest(
                f"The pool uri must be a storage URI (scheme://...) of at most {URI} characters."
            )
        check_uri(uri)  # a malformed URI is the request's fault: 400, before any probe
    if "weight" in fields:
        checked["weight"] = validation.integer(fields["weight"], "The pool weight", 0, MAX_WEIGHT)
    if fields.get("flavor") == "":
        checked["flavor"] = None  # Zaqar's way of taking a pool out of its flavor
    elif fields.get("flavor") is not None:
        checked["flavor"] = validation.name(fields["flavor"], field="The pool flavor")
    if "options" in fields:
        options = {} if fields["options"] is None else fields["options"]
        checked["options"] = validation.object_document(options, "The pool options")
    return checked


def _flavor_fields(fields: dict[str, Any]) -> dict[str, Any]:
    checked = dict(fields)
    if "pool_list" in fields:
        pool_list = fields["pool_list"]
        if not isinstance(pool_list, list) or not pool_list:
            raise InvalidRequest("The flavor pool_list must be a non-empty list of pool names.")
        names = [validation.name(p, field="A pool_list entry") for p in pool_list]
        checked["pool_list"] = list(dict.fromkeys(names))
    if "capabilities" in fields:
        capabilities = {} if fields["capabilities"] is None else fields["capabilities"]
        checked["capabilities"] = validation.object_document(
            capabilities, "The flavor capabilities"
        )
    return checked
