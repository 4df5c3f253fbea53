"""The artifact under test: a wheel built from this checkout, installed in a virtualenv.

``.ci/artifact`` builds the sdist and, from it, the wheel (``python -m
build``), installs the wheel into a fresh virtualenv and names both here:

    ZQ_TEST_VENV  the virtualenv (its ``bin/zq`` and ``bin/python`` are used)
    ZQ_TEST_DIST  the directory holding the wheel and the sdist

Every command runs the installed console script from a directory outside
the checkout, with no PYTHONPATH, so what is tested is what ``pip install``
gives a user, never this checkout's source. Without the variables these
tests fail under CI (``CI`` set) and are skipped elsewhere, saying how to
run them.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.server import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
VENV_VARIABLE, DIST_VARIABLE = "ZQ_TEST_VENV", "ZQ_TEST_DIST"
HOW = ("build and install the artifact with .ci/artifact (.ci/run does), which sets "
       f"{VENV_VARIABLE} and {DIST_VARIABLE}")


def _required(name: str) -> Path:
    value = os.environ.get(name, "")
    if not value:
        message = f"{name} is not set: {HOW}"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)  # CI never skips the artifact
        pytest.skip(message)
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"{name}={value} is not a directory: {HOW}", pytrace=False)
    return path


@dataclass(frozen=True)
class Installed:
    """The virtualenv holding the installed wheel, and how to run what it holds."""

    venv: Path
    dist: Path

    @property
    def zq(self) -> Path:
        return self.venv / "bin" / "zq"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def site_packages(self) -> Path:
        found = self.run_python("import sysconfig; print(sysconfig.get_path('purelib'))")
        return Path(found.strip())

    def run_python(self, code: str, cwd: Path | None = None) -> str:
        done = subprocess.run(
            [str(self.python), "-c", code], cwd=cwd or self.venv, env=outside_env(),
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def wheel(self) -> Path:
        (wheel,) = self.dist.glob("zq-*.whl")
        return wheel

    def sdist(self) -> Path:
        (sdist,) = self.dist.glob("zq-*.tar.gz")
        return sdist


def outside_env(data_home: Path | None = None) -> dict[str, str]:
    """An environment in which nothing points back at the checkout.

    No PYTHONPATH, no ZQ_* setting of the caller, no active virtualenv; a
    private data directory when given.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ZQ_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONUNBUFFERED"] = "1"
    if data_home is not None:
        env["XDG_DATA_HOME"] = str(data_home)
    return env


@pytest.fixture(scope="session")
def installed() -> Installed:
    venv, dist = _required(VENV_VARIABLE), _required(DIST_VARIABLE)
    found = Installed(venv, dist)
    if not found.zq.is_file():
        pytest.fail(f"{found.zq} does not exist: is {venv} a virtualenv with zq installed? "
                    f"{HOW}", pytrace=False)
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working directory outside the checkout (the checkout is not importable from it)."""
    directory = tmp_path / "cwd"
    directory.mkdir()
    assert ROOT not in directory.parents
    return directory


@pytest.fixture
def zq(installed: Installed, outside: Path, tmp_path: Path):
    """Run the installed ``zq`` console script: ``zq("config", ...)`` -> CompletedProcess."""
    env = outside_env(tmp_path / "data")

    def run(*argv: str, timeout: float = 300.0, extra_env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess:
        # A session of its own: a command that does not end (a server that
        # should have been refused) is killed with every worker it forked.
        with subprocess.Popen(
            [str(installed.zq), *argv], cwd=outside, env={**env, **(extra_env or {})},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        ) as process:
            try:
                out, err = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                raise AssertionError(f"zq {' '.join(argv)} did not end in {timeout}s") from None
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    return run


@pytest.fixture
def serve(installed: Installed, outside: Path, tmp_path: Path) -> Iterator:
    """Start the installed ``zq serve ARGS``; every server is stopped after the test."""
    started: list[ServerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None,
              ping_headers: dict[str, str] | None = None) -> ServerProcess:
        process = ServerProcess(tmp_path / f"server-{len(started)}.log",
                                {**outside_env(tmp_path / "data"), **(env or {})}, *args,
                                command=[str(installed.zq)], cwd=outside,
                                ping_headers=ping_headers)
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()
