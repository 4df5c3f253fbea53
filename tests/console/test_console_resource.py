"""``/console`` as HTTP: the page and its files, their headers, and the rules
the scripts keep (no inline code, no HTML built from strings). No browser."""

from __future__ import annotations

import re
from pathlib import Path

import falcon.testing
import pytest

from zq.api import create_app
from zq.api.console import CSP
from zq.auth import tokens
from zq.config import Config

STATIC = Path(__file__).resolve().parents[2] / "zq" / "console" / "static"


@pytest.fixture(scope="module", params=["none", "token"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> falcon.testing.TestClient:
    auth = {"strategy": request.param}
    if request.param == "token":
        auth["tokens_file"] = str(tmp_path_factory.mktemp("tokens") / "tokens.json")
        tokens.issue(auth["tokens_file"], "p", ["member"])
    config = Config().with_overrides(storage={"uri": "sqlite://"}, auth=auth)
    client = falcon.testing.TestClient(create_app(config))
    client.strategy = request.param  # type: ignore[attr-defined]
    return client


def test_the_page_needs_no_identity_and_says_how_to_sign_in(client) -> None:
    # A browser's navigation: no Client-ID, no token, HTML first in Accept.
    page = client.simulate_get("/console", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    strategy = re.search(r'<meta name="zq-auth" content="([a-z]+)">', page.text)
    assert strategy and strategy.group(1) == client.strategy
    assert "{{auth}}" not in page.text


def test_every_response_carries_the_strict_policy(client) -> None:
    names = ["/console"] + [f"/console/static/{p.name}" for p in STATIC.iterdir()
                            if p.name != "index.html"]
    for name in names:
        answer = client.simulate_get(name)
        assert answer.status_code == 200, name
        assert answer.headers["content-security-policy"] == CSP
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"
    assert "script-src 'self'" in CSP and "unsafe" not in CSP
    assert "default-src 'none'" in CSP and "frame-ancestors 'none'" in CSP


def test_scripts_and_styles_have_their_types(client) -> None:
    assert client.simulate_get("/console/static/main.js").headers["content-type"] == (
        "text/javascript; charset=utf-8")
    assert client.simulate_get("/console/static/console.css").headers["content-type"] == (
        "text/css; charset=utf-8")


@pytest.mark.parametrize("name", ["nope.js", "index.html", "..%2F__init__.py", "__init__.py"])
def test_only_the_console_files_are_served(client, name: str) -> None:
    answer = client.simulate_get(f"/console/static/{name}")
    assert answer.status_code == 404
    assert answer.json["title"] and answer.json["description"]


def test_the_page_has_no_inline_script_or_style() -> None:
    html = (STATIC / "index.html").read_text()
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts and all('src="/console/static/' in tag for tag in scripts)
    assert re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S) == [""] * len(scripts)
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)  # no event handler attributes


def test_the_scripts_never_build_html_from_strings() -> None:
    # Bodies and descriptions reach the page only as text (dom.js: textContent).
    forbidden = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|"
        r"setAttribute\(\s*[\"']on|setAttribute\(\s*[\"']style")
    for script in STATIC.glob("*.js"):
        assert not forbidden.search(script.read_text()), script.name


def test_every_imported_module_is_shipped() -> None:
    for script in STATIC.glob("*.js"):
        for imported in re.findall(r'from "\./([a-z0-9]+\.js)"', script.read_text()):
            assert (STATIC / imported).is_file(), f"{script.name} imports {imported}"
