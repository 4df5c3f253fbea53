"""The operator console in a real browser: Playwright driving the distribution's Chromium.

One zq app per module, under token auth on SQLite, served by a threaded
wsgiref server in this process (the console only calls the public API, so
the backend is the API suites' concern). The browser is module-scoped:
Playwright's sync API runs its own event loop, and one per test both
slows the suite and clashes with a loop another plugin left behind.

Chromium comes from the distribution (``apt-get install chromium``, done
by .ci/run); nothing is downloaded. Missing it or Playwright skips these
tests locally and fails them under CI.
"""

from __future__ import annotations

import os
import shutil
import socketserver
import tempfile
import threading
import time
import uuid
import wsgiref.simple_server
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import falcon
import pytest

from tests.api.helpers import Api
from zq.api import create_app
from zq.auth import tokens
from zq.clock import ManualClock
from zq.config import Config
from zq.metrics.waiting import WaitingCensus
from zq.storage import open_storage

CHROMIUM = os.environ.get("ZQ_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser")
# docs/console/*.png are refreshed on request (ZQ_CONSOLE_SCREENSHOTS=docs/console);
# otherwise the screenshots go to a scratch folder, so a test run leaves the
# checkout as it found it.
SCREENSHOTS = Path(os.environ.get("ZQ_CONSOLE_SCREENSHOTS")
                   or Path(tempfile.gettempdir()) / "zq-console-screenshots")
VIEWPORT = {"width": 1280, "height": 800}


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI installs it: .ci/run)")
    pytest.skip(reason)


class TokenApi(Api):
    """The API as one token sees it (no X-Project-ID: the token names the project)."""

    def __init__(self, app: falcon.App, project: str, token: str) -> None:
        super().__init__(app, project)
        self.token = token

    def headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        return {"Client-ID": self.client_id, "X-Auth-Token": self.token, **(extra or {})}


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class ThreadingServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


@dataclass
class Served:
    """A running app: its URL, an admin and a member token of project A, one of B."""

    url: str
    app: falcon.App
    admin: TokenApi
    member: TokenApi
    other: TokenApi
    clock: ManualClock
    storage: Any  # the backend itself, to seed large workloads without HTTP
    # The server's count of waiting claims (long poll), fed directly: the
    # claims themselves wait only under zq serve (tests/e2e).
    waiting: WaitingCensus

    def has_route(self, method: str, path: str) -> bool:
        """Whether this zq serves ``method path`` (redrive and consumers are newer routes)."""
        body = {"dry_run": True} if method == "POST" else None
        answer = self.admin.request(method, path, json=body)
        return not (answer.status_code in (404, 405) and "queue" not in answer.text.lower())

    @staticmethod
    def script_errors(errors: list[str]) -> list[str]:
        """Console errors of the page itself (exceptions, CSP violations), not the
        browser's line for each refused call (a 400 shown inline is by design)."""
        return [e for e in errors if not e.startswith("Failed to load resource:")]

    def unexpected(self, errors: list[str]) -> list[str]:
        """Console errors, less the 404 of probing a route this zq does not have yet."""
        absent = [suffix for suffix, method in (("/redrive", "POST"), ("/consumers", "GET"))
                  if not self.has_route(method, f"/v2/queues/probe{suffix}")]
        return [e for e in errors if not (
            e.startswith("Failed to load resource: the server responded with a status of 404")
            and any(e.rstrip(")").endswith(suffix) for suffix in absent))]


def serve(app: Any) -> tuple[str, ThreadingServer, threading.Thread]:
    server = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, app, server_class=ThreadingServer, handler_class=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{server.server_port}", server, thread


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("console")
    tokens_file = tmp / "tokens.json"
    suffix = uuid.uuid4().hex[:8]
    project_a, project_b = f"shop-{suffix}", f"other-{suffix}"
    _, admin_token = tokens.issue(tokens_file, project_a, ["admin"])
    _, member_token = tokens.issue(tokens_file, project_a, ["member"])
    _, other_token = tokens.issue(tokens_file, project_b, ["member"])
    config = Config().with_overrides(auth={"strategy": "token", "tokens_file": str(tokens_file)})
    # The wall clock's time, moved by hand: ages read sensibly in screenshots.
    clock = ManualClock(start=time.time())
    storage = open_storage(f"sqlite:///{tmp / 'zq.sqlite3'}", clock=clock)
    waiting = WaitingCensus()
    app = create_app(config, storage=storage, clock=clock, waiting=waiting)
    url, server, thread = serve(app)
    try:
        yield Served(url, app, TokenApi(app, project_a, admin_token),
                     TokenApi(app, project_a, member_token),
                     TokenApi(app, project_b, other_token), clock, storage, waiting)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install '.[test]')")
    if not CHROMIUM:
        _missing("chromium is not installed (apt-get install chromium)")
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watched:
    """A page with everything that must not happen recorded: dialogs, console
    errors (a Content-Security-Policy violation is one)."""

    page: Any
    dialogs: list[str]
    console_errors: list[str]


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(10_000)
    dialogs: list[str] = []
    console_errors: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda m: console_errors.append(
        f"{m.text} ({m.location.get('url', '')})") if m.type == "error" else None)
    page.on("pageerror", lambda e: console_errors.append(f"pageerror: {e}"))
    try:
        yield Watched(page, dialogs, console_errors)
    finally:
        context.close()


def sign_in(page: Any, url: str, token: str) -> None:
    page.goto(f"{url}/console")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Open console").click()
    page.wait_for_selector("#nav:not([hidden])")


def open_dead_letters(page: Any, url: str, queue: str) -> None:
    """The dead letter browser of QUEUE, once every page of it has come.

    Groups show from the first page on and the page is redrawn as the rest
    comes: reading it at the first group would read a moment of the loading.
    """
    page.goto(f"{url}/console#/dlq/{queue}")
    page.wait_for_selector('#groups[aria-busy="false"]')


def shot(page: Any, name: str, *, full_page: bool = False) -> None:
    """A screenshot for docs/console.md (NAME.png in SCREENSHOTS)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)
