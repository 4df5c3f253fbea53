"""``[notifications] allowed_hosts`` as entries: read with the configuration.

An entry is ``HOST[:PORT]``: HOST a name, an IP address or a CIDR block
(IPv6 in brackets when a port follows); no port means any port. Parsed
here, when the configuration is read (zq.config), so that a malformed
entry stops ``zq serve`` and ``zq config`` in one line; the notifier
(zq.notifications.hosts) matches URLs against the entries.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Entry:
    name: str | None  # a host name (lower case), or None for an address entry
    network: Network | None
    port: int | None


def parse_entries(text: str) -> list[Entry]:
    """The entries of the setting; ValueError names a malformed one."""
    entries = []
    for raw in (part.strip() for part in text.split(",")):
        if raw:
            entries.append(_entry(raw))
    return entries


def _entry(raw: str) -> Entry:
    host, port = raw, None
    if raw.startswith("["):
        host, _, rest = raw[1:].partition("]")
        if rest:
            port = _port(rest.removeprefix(":"), raw)
    elif raw.count(":") == 1:
        host, text = raw.split(":")
        port = _port(text, raw)
    try:
        return Entry(None, ipaddress.ip_network(host, strict=False), port)
    except ValueError:
        if not host or "/" in host or ":" in host:
            raise ValueError(f"allowed_hosts entry {raw!r} is not HOST[:PORT] (HOST a name, "
                             "an IP or a CIDR block, [IPv6] with a port; no scheme, no "
                             "path)") from None
        return Entry(host.lower().rstrip("."), None, port)


def _port(text: str, raw: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"allowed_hosts entry {raw!r} has no valid port (1..65535)")
    return int(text)
