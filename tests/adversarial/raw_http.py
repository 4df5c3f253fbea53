"""HTTP/1.1 by hand over sockets: requests no well-behaved client library would send."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def head(method: str, path: str, *extra: str) -> bytes:
    """A request line and headers (zq's required ones and ``extra``), blank line included."""
    lines = [f"{method} {path} HTTP/1.1", "Host: zq", f"Client-ID: {uuid.uuid4()}",
             "X-Project-ID: adversarial", "Content-Type: application/json", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@contextmanager
def held_connections(url: str, data: bytes, count: int,
                     receive_buffer: int | None = None) -> Iterator[list[socket.socket]]:
    """``count`` connections that have sent ``data`` and then nothing more; closed after."""
    connections: list[socket.socket] = []
    try:
        for _ in range(count):
            connection = socket.socket()
            connections.append(connection)
            if receive_buffer:  # before connecting, so the window is small from the start
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            connection.settimeout(5)
            connection.connect(address(url))
            connection.sendall(data)
        yield connections
    finally:
        for connection in connections:
            connection.close()


@dataclass
class Answer:
    """All a server sent on a connection until it closed it, and when it closed."""

    data: bytes
    closed_after: float  # seconds since ``since``

    @property
    def status(self) -> int:
        return int(self.data.split(b" ", 2)[1]) if self.data.startswith(b"HTTP/1.1 ") else 0

    @property
    def body(self) -> bytes:
        return self.data.partition(b"\r\n\r\n")[2]

    def header(self, name: str) -> str | None:
        head = self.data.partition(b"\r\n\r\n")[0].decode("latin-1")
        for line in head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


def read_until_closed(connection: socket.socket, since: float, limit: float) -> Answer:
    """What the server sends until it closes the connection; fails after ``limit`` seconds."""
    data = b""
    while True:
        remaining = since + limit - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"the server kept the connection open {limit} s: {data!r}")
        connection.settimeout(remaining)
        try:
            chunk = connection.recv(65536)
        except ConnectionResetError:
            chunk = b""
        except TimeoutError:
            continue
        if not chunk:
            connection.close()
            return Answer(data, time.monotonic() - since)
        data += chunk
