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
from urllib.parse import SplitResult, urlsplit

from zq.allowed_hosts import Entry, parse_entries

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]


class Refused(Exception):
    """The URL may not be used; the message says why.

    ``lasting``: the entries alone refuse it, whatever DNS answers, so only
    a change of ``allowed_hosts`` could allow it (the subscription API
    refuses such a subscriber, and the notifier does not retry it).
    """

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


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
        parts, host, port = self._listed_url(url)
        try:
            addresses: list[Address] = [ipaddress.ip_address(host)]
        except ValueError:
            addresses = self._public_or_listed(host, port)
        target_path = parts.path or "/"
        if parts.query:
            target_path += "?" + parts.query
        return Target(parts.scheme, host, port, str(addresses[0]), target_path)

    def never(self, url: str) -> str | None:
        """Why the entries refuse ``url`` whatever DNS answers; None when they may allow it."""
        try:
            self._listed_url(url)
        except Refused as exc:
            return str(exc)
        return None

    def _listed_url(self, url: str) -> tuple[SplitResult, str, int]:
        """The URL's parts, host and port, when an entry lists them (Refused, lasting, if not).

        An IP address must lie in an IP/CIDR entry of its port; a name must
        be a name entry of its port (where it resolves is checked after).
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Refused(f"{url!r} is not an http(s) URL", lasting=True)
        if not self._entries:
            raise Refused("no webhook host is allowed ([notifications] allowed_hosts is empty)",
                          lasting=True)
        host = parts.hostname.lower().rstrip(".")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise Refused(f"{url!r} has an invalid port", lasting=True) from exc
        try:
            address: Address | None = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None:
            listed = self._listed(address, port)
            other_ports = not listed and self._on_other_ports(address, port)
        else:
            listed = any(e.name == host and e.port in (None, port) for e in self._entries)
            other_ports = not listed and any(e.name == host for e in self._entries)
        if other_ports:
            raise Refused(f"port {port} is not allowed for {host} (allowed_hosts lists it "
                          "with other ports only)", lasting=True)
        if not listed:
            raise Refused(f"{host} is not in allowed_hosts", lasting=True)
        return parts, host, port

    def _public_or_listed(self, host: str, port: int) -> list[Address]:
        """What a listed name resolves to, when every address may be used."""
        try:
            addresses = [ipaddress.ip_address(a.split("%")[0]) for a in self._resolve(host, port)]
        except OSError as exc:
            raise Refused(f"{host} does not resolve: {exc}") from exc
        if not addresses:
            raise Refused(f"{host} resolves to no address")
        for address in addresses:
            # A listed name may lead to public addresses; a private one needs
            # an IP/CIDR entry (a public name resolving into the network).
            if not self._listed(address, port) and not address.is_global:
                why = ("listed in allowed_hosts for other ports only"
                       if self._on_other_ports(address, port) else
                       "a private or loopback address needs an explicit IP entry")
                raise Refused(f"{host}:{port} resolves to {address}, not allowed ({why})")
        return addresses

    def _on_other_ports(self, address: Address, port: int) -> bool:
        return any(e.network is not None and address in e.network and e.port not in (None, port)
                   for e in self._entries)

    def _listed(self, address: Address, port: int) -> bool:
        return any(e.network is not None and address in e.network and e.port in (None, port)
                   for e in self._entries)
