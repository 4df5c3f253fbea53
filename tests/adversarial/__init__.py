"""Attacks a hostile or unlucky client can make, kept running in CI.

Each file is named for the shape of attack it replays and checks what
docs/security.md promises about it:

- ``test_slow_clients.py``: clients that send a body, a request head or
  read an answer slowly or never, against a real ``zq serve``: the server
  keeps answering others within 100 ms, and stalled requests are closed
  after the configured bounds (``[server] body_timeout``, ``[server]
  timeout``).
- ``test_protocol_errors.py``: requests the HTTP server refuses before zq
  sees them (duplicate Content-Length, bad bytes in the request line).
- ``test_concurrent_metadata.py``: concurrent metadata PATCHes racing to
  lose each other's keys or close a dead letter cycle, on every backend.

- ``test_extreme_values.py``, ``test_deep_json.py``, ``test_nul_bytes.py``,
  ``test_names.py``, ``test_large_posts.py``, ``test_backend_errors.py``:
  input no client should send (out-of-range markers and counts, integers
  past 64 bits, signed URL expiries outside the calendar, JSON nested past
  the configured depth, NUL and control bytes in ids and names, ``.`` and
  ``..``, a trailing newline, the largest post the limits allow, a backend
  failing): always a 4xx with title and description (or a generic 503),
  never a 500, never backend text, on every backend.

Add a file per new shape of attack (extreme values, NUL bytes, deep JSON,
concurrent writers, ...). Tests here must stay quick (the suite runs on
every CI run) and must fail when the defence they check is removed.

    python -m pytest tests/adversarial -q
"""
