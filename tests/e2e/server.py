"""A real ``zq serve`` subprocess for end-to-end tests.

The server is started with ``--port 0`` (the kernel picks a free port, so
parallel runs never collide) and the address is read from its start line.
It runs in a process group of its own (the gunicorn master and its workers),
so ``kill()`` can SIGKILL all of it at once, as a crash or the OOM killer
would. Every wait is bounded; ``stop()`` always ends the process.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
# Group 2 is the storage, or with pooling the management store.
START_LINE = re.compile(
    r"zq serving (http://\S+)/v2 on (?:storage|the pools of management store) (\S+) "
    r"with (\d+) worker"
)
START_TIMEOUT = 60.0  # seconds; a 2-core machine shared with other test runs
# How the tests run zq: this checkout's package. tests/installed passes the
# console script of a virtualenv instead (and a cwd outside the checkout).
CHECKOUT_ZQ = (sys.executable, "-m", "zq")


def clean_environment(data_home: Path) -> dict[str, str]:
    """The caller's environment without ZQ_* settings, with a private data dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZQ_")}
    env["XDG_DATA_HOME"] = str(data_home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_zq(*argv: str, env: dict[str, str], timeout: float = 120.0,
           command: Sequence[str] = CHECKOUT_ZQ, cwd: Path = ROOT
           ) -> subprocess.CompletedProcess:
    """Run ``zq ARGV`` (by default ``python -m zq`` from this checkout) and wait for it."""
    return subprocess.run(
        [*command, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=timeout,
    )


class ServerProcess:
    """``zq serve`` in the background (``python -m zq`` by default), logging to a file."""

    def __init__(self, log_path: Path, env: dict[str, str], *args: str,
                 command: Sequence[str] = CHECKOUT_ZQ, cwd: Path = ROOT,
                 ping_headers: dict[str, str] | None = None) -> None:
        self.log_path = log_path
        self.env = env
        self.args = ["--port", "0", *args]
        self.command = list(command)
        self.cwd = cwd
        self.ping_headers = ping_headers or {}  # e.g. a token, when auth is on
        self.process: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> ServerProcess:
        """Start and wait until ``/v2/ping`` answers 204."""
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [*self.command, "serve", *self.args],
                cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while not self.url:
            match = START_LINE.search(self.log())
            if match:
                self.url = match.group(1)
            elif self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"zq serve did not start:\n{self.log()}")
            else:
                time.sleep(0.05)
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"zq serve never answered /v2/ping:\n{self.log()}")
            time.sleep(0.05)
        return self

    def ping(self) -> bool:
        headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "e2e-ping",
                   **self.ping_headers}
        try:
            response = httpx.get(f"{self.url}/v2/ping", headers=headers, timeout=2,
                                 trust_env=False)
            return response.status_code == 204
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL the master and every worker at once (the whole process group)."""
        if self.process is None:
            return
        # The kernel ends every member of the group; a worker can neither
        # catch SIGKILL nor outlive it with an open socket or connection.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout)

    def stop(self, timeout: float = 30.0, *, group: bool = False) -> int | None:
        """SIGTERM (graceful), then SIGKILL after ``timeout``; returns the exit status.

        ``group`` sends SIGTERM to the master and every worker at once, as
        systemd does by default; otherwise only the master gets it.
        """
        if self.process is None:
            return None
        if self.process.poll() is None:
            if group:
                os.killpg(self.process.pid, signal.SIGTERM)
            else:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode
