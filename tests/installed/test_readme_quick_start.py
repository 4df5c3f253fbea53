"""The README's first quick-start command, run literally as a new user would.

A fresh virtualenv and a fresh copy of the tracked files (a clone), then
``pip install . && zq serve`` in a shell: the server must answer
``/v2/ping``, then stop on SIGTERM. The port and the data directory come
from the environment (``ZQ_SERVER_PORT``, ``XDG_DATA_HOME``), so the command
itself is the README's, word for word. The second command (``pip install
'.[test,spark]' && python -m pytest``) is what .ci/run runs; test_readme.py
keeps the two in step.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.installed.conftest import ROOT, Installed, outside_env
from tests.installed.test_artifacts import tracked

pytestmark = pytest.mark.slow

README = (ROOT / "README.md").read_text()
INSTALL_TIMEOUT = 600.0  # seconds for pip to install zq and its dependencies


def quick_start_serve_command() -> str:
    (command,) = re.findall(r"```sh\n(pip install \. && zq serve)\n```", README)
    return command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fresh_clone(target: Path) -> Path:
    """The files a ``git clone`` of this checkout holds."""
    for name in tracked("."):
        source = ROOT / name
        if source.is_file():
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    return target


def test_pip_install_dot_and_zq_serve_in_a_fresh_virtualenv(
    installed: Installed, tmp_path: Path
) -> None:
    # `installed`: this runs only where the artifact stage runs (.ci/run).
    command = quick_start_serve_command()
    clone = fresh_clone(tmp_path / "zq")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    port = free_port()
    env = outside_env(tmp_path / "data")
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv),
               ZQ_SERVER_PORT=str(port), PIP_DISABLE_PIP_VERSION_CHECK="1")
    log = tmp_path / "quick-start.log"
    with open(log, "wb") as out:
        shell = subprocess.Popen(["bash", "-c", command], cwd=clone, env=env,
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        deadline = time.monotonic() + INSTALL_TIMEOUT
        while not _pings(port):
            assert shell.poll() is None, f"the command ended:\n{log.read_text()[-5000:]}"
            assert time.monotonic() < deadline, f"no answer:\n{log.read_text()[-5000:]}"
            time.sleep(0.5)
        # The server is the virtualenv's zq, serving the embedded SQLite default.
        assert (tmp_path / "data" / "zq" / "zq.sqlite3").is_file()
        assert (venv / "bin" / "zq").is_file()
    finally:
        # SIGTERM to the shell and the server, as Ctrl-C or systemd would stop them.
        os.killpg(shell.pid, signal.SIGTERM)
        stopped = _wait(lambda: "zq stopped" in log.read_text(errors="replace"), 60)
        if not stopped:
            os.killpg(shell.pid, signal.SIGKILL)
        shell.wait(10)
    assert stopped, f"zq serve did not stop on SIGTERM:\n{log.read_text()[-5000:]}"
    assert not _pings(port)


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _pings(port: int) -> bool:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "quick-start"}
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/v2/ping", headers=headers, timeout=2,
                           trust_env=False)
    except httpx.HTTPError:
        return False
    return answer.status_code == 204
