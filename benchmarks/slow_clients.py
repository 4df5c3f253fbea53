"""Latency of ``/v2/ping`` while slow clients hold connections to a zq server.

    python -m benchmarks.slow_clients --url http://127.0.0.1:8888 --stalled 50

Opens ``--stalled`` connections of one kind (``body``: headers announcing
``Content-Length: 100`` and one byte of body; ``head``: half a request
line and header; ``unread``: a client that sends requests and never reads
an answer), waits a moment for the server to take them, then times
``--pings`` sequential pings on fresh connections (each bounded by
``--ping-timeout``), and prints one JSON line: p50/p99 ms, errors (pings
that failed or timed out), and how many stalled connections the server
had closed by the end. Only loopback URLs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import sys
import time
import uuid
from urllib.parse import urlsplit

KINDS = ("body", "head", "unread")


def stalled_request(kind: str, host: str) -> bytes:
    """The bytes a stalled client of ``kind`` sends, and then nothing more."""
    headers = (f"Host: {host}\r\nClient-ID: {uuid.uuid4()}\r\nX-Project-ID: slow\r\n"
               "Content-Type: application/json\r\n")
    if kind == "body":
        return (f"POST /v2/queues/slow/messages HTTP/1.1\r\n{headers}"
                "Content-Length: 100\r\n\r\n[").encode()
    if kind == "head":
        return b"POST /v2/queues/slow/messages HTTP/1.1\r\nHost: " + host.encode()
    # Many pipelined GETs of the home document whose answers are never read.
    return (f"GET /v2 HTTP/1.1\r\n{headers}\r\n" * 2000).encode()


def open_stalled(kind: str, host: str, port: int, count: int) -> list[socket.socket]:
    connections = []
    for _ in range(count):
        connection = socket.create_connection((host, port), timeout=5)
        connection.setblocking(False)
        # The unread kind fills the buffers: what it is for.
        with contextlib.suppress(BlockingIOError):
            connection.send(stalled_request(kind, f"{host}:{port}"))
        connections.append(connection)
    return connections


def closed_by_server(connection: socket.socket) -> bool:
    """Whether the server closed (or reset) a connection; reads what it answered."""
    try:
        while True:
            if not connection.recv(65536):
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def ping_once(host: str, port: int, timeout: float) -> float | None:
    """Seconds one ``GET /v2/ping`` took on a fresh connection, None if it failed."""
    request = (f"GET /v2/ping HTTP/1.1\r\nHost: {host}:{port}\r\nClient-ID: {uuid.uuid4()}\r\n"
               "X-Project-ID: ping\r\nConnection: close\r\n\r\n").encode()
    began = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.settimeout(max(0.001, timeout - (time.perf_counter() - began)))
            connection.sendall(request)
            answer = connection.recv(4096)
    except OSError:
        return None
    if not answer.startswith(b"HTTP/1.1 204"):
        return None
    return time.perf_counter() - began


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(url: str, kind: str, stalled: int, pings: int, ping_timeout: float, settle: float) -> dict:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    connections = open_stalled(kind, host, port, stalled)
    try:
        time.sleep(settle)
        began = time.monotonic()
        latencies = [ping_once(host, port, ping_timeout) for _ in range(pings)]
        elapsed = time.monotonic() - began
        answered = [1000 * value for value in latencies if value is not None]
        return {
            "kind": kind, "stalled": stalled, "pings": pings,
            "p50_ms": round(statistics.median(answered), 2) if answered else None,
            "p99_ms": round(percentile(answered, 0.99), 2) if answered else None,
            "max_ms": round(max(answered), 2) if answered else None,
            "errors": pings - len(answered),
            "seconds": round(elapsed, 1),
            "closed_by_server": sum(closed_by_server(c) for c in connections),
        }
    finally:
        for connection in connections:
            connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.slow_clients",
        description="Ping latency of a zq server while slow clients hold connections.",
        epilog="examples:\n"
               "  python -m benchmarks.slow_clients --url http://127.0.0.1:8888\n"
               "  python -m benchmarks.slow_clients --kind head --stalled 200 --pings 500",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", default="http://127.0.0.1:8888", help="loopback server URL")
    parser.add_argument("--kind", choices=KINDS, action="append",
                        help="repeatable; what the stalled clients do (default: body)")
    parser.add_argument("--stalled", type=int, default=50, help="stalled connections (50)")
    parser.add_argument("--pings", type=int, default=200, help="sequential pings timed (200)")
    parser.add_argument("--ping-timeout", type=float, default=2.0,
                        help="seconds a ping may take before it counts as an error (2)")
    parser.add_argument("--settle", type=float, default=0.5,
                        help="seconds between opening the stalled connections and pinging (0.5)")
    args = parser.parse_args(argv)
    host = urlsplit(args.url).hostname or ""
    if host not in {"127.0.0.1", "localhost", "::1"}:
        print(f"error: only loopback URLs, got {args.url}", file=sys.stderr)
        return 2
    for kind in args.kind or ["body"]:
        print(json.dumps(run(args.url, kind, args.stalled, args.pings, args.ping_timeout,
                             args.settle)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
