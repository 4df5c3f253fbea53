"""``[notifications] allowed_hosts``: where a webhook may go, and the address it uses.

An entry is ``HOST[:PORT]``: HOST a name, an IP address or a CIDR block
(IPv6 in brackets when a port follows); no port means any port. A URL is
allowed when its host and port match an entry, and every address its host
resolves to is public, or lies in an IP/CIDR entry of that port: a private,
loopback or link-local address needs an explicit entry, so a public name
that resolves into the operator's network (DNS rebinding) is refused. The
connection then goes to the address that was checked, never to a second
lookup. Empty: nothing is allowed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from zq.allowed_hosts import Entry, parse_entries

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]


class Refused(Exception):
    """The URL may not be used; the message says why."""


@dataclass(frozen=True)
class Target:
    """A checked URL: connect to ``address``, speak to ``host``."""

    scheme: str
    host: str
    port: int
    address: str
    path: str  # path and query


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AllowedHosts:
    def __init__(self, entries: list[Entry], resolver: Resolver = system_resolver) -> None:
        self._entries = entries
        self._resolve = resolver

    @classmethod
    def from_setting(cls, text: str, resolver: Resolver = system_resolver) -> AllowedHosts:
        return cls(parse_entries(text), resolver)

    def check(self, url: str) -> Target:
        """The target of ``url`` if it may be used; Refused otherwise."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Refused(f"{url!r} is not an http(s) URL")
        if not self._entries:
            raise Refused("no webhook host is allowed ([notifications] allowed_hosts is empty)")
        host = parts.hostname.lower().rstrip(".")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise Refused(f"{url!r} has an invalid port") from exc
        named = any(e.name == host and e.port in (None, port) for e in self._entries)
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            if not named:
                raise Refused(f"{host}:{port} is not in allowed_hosts") from None
            try:
                found = self._resolve(host, port)
                addresses = [ipaddress.ip_address(a.split("%")[0]) for a in found]
            except OSError as exc:
                raise Refused(f"{host} does not resolve: {exc}") from exc
        if not addresses:
            raise Refused(f"{host} resolves to no address")
        for address in addresses:
            listed = self._listed(address, port)
            if not listed and not (named and address.is_global):
                why = "" if address.is_global else (
                    " (a private or loopback address needs an explicit IP entry)")
                raise Refused(f"{host}:{port} resolves to {address}, not allowed{why}")
        target_path = parts.path or "/"
        if parts.query:
            target_path += "?" + parts.query
        return Target(parts.scheme, host, port, str(addresses[0]), target_path)

    def _listed(self, address: Address, port: int) -> bool:
        return any(e.network is not None and address in e.network and e.port in (None, port)
                   for e in self._entries)
