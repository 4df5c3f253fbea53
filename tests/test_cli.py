"""The zq command line: help texts, configuration precedence, error messages."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.pooling.registered import register_pools
from zq import cli
from zq.commands import serve as serve_command
from zq.server import granian_settings
from zq.storage.delivery_rules import DeliveryRules

ROOT = Path(__file__).resolve().parents[1]

# Every subcommand, as the words typed after `zq`.
COMMANDS = [
    ["serve"], ["db"], ["db", "upgrade"], ["gc"], ["config"],
    ["events"], ["events", "export"], ["stats"],
    ["token"], ["token", "add"], ["token", "list"], ["token", "revoke"],
    ["redrive"], ["breaker"], ["breaker", "show"], ["breaker", "open"], ["breaker", "close"],
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ZQ_* variable of the caller leaks in; the data directory is private."""
    import os

    for name in list(os.environ):
        if name.startswith("ZQ_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def run_zq(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        status = cli.main(list(argv))
    except SystemExit as exit_:  # argparse: --help (0) and bad command lines (2)
        status = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def test_every_command_module_is_importable() -> None:
    cli.build_parser()
    assert cli.UNAVAILABLE == {}


def test_top_level_help_lists_commands_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_zq("--help", capsys=capsys)
    assert status == 0
    for command in ("serve", "db", "gc", "config", "token", "events", "stats"):
        assert f"    {command} " in out
    assert "dead letter queue" in out
    assert "examples:" in out and "zq serve --storage postgresql://" in out


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_subcommand_explains_itself(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run_zq(*words, "--help", capsys=capsys)
    assert status == 0
    usage, _, rest = out.partition("\n\n")
    assert usage.startswith(f"usage: zq {' '.join(words)}")
    description = rest.split("\n\n")[0]
    assert len(description) > 40, f"zq {' '.join(words)} --help has no description"
    assert "example" in out.lower(), f"zq {' '.join(words)} --help shows no example"


def _leaf_commands(parser, words=()):
    import argparse

    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield words, parser
    for action in actions:
        for name, sub in action.choices.items():
            yield from _leaf_commands(sub, (*words, name))


def test_every_command_on_the_command_line_has_a_handler() -> None:
    # zq.cli.main calls args.handler: a command that binds anything else
    # parses fine and then crashes (zq token did, with an AttributeError).
    leaves = list(_leaf_commands(cli.build_parser()))
    assert {words[0] for words, _ in leaves} >= {"serve", "token", "events", "stats"}
    for words, parser in leaves:
        assert callable(parser.get_default("handler")), f"zq {' '.join(words)} has no handler"
    assert sorted(" ".join(words) for words, _ in leaves) == sorted(
        " ".join(words) for words in COMMANDS if not any(
            " ".join(other[:-1]) == " ".join(words) for other in COMMANDS if len(other) > 1))


def test_each_command_is_owned_by_the_module_cli_imports_for_it() -> None:
    # `zq COMMAND` imports only cli.COMMANDS[COMMAND]: a command registered by
    # another module would be missing from its own parser.
    for command, module in cli.COMMANDS.items():
        parser = cli.build_parser([command, "--help"])
        (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        assert command in action.choices, (command, module)
    assert set(cli.COMMANDS) == {words[0] for words in COMMANDS}


def test_a_command_does_not_pay_for_the_others_imports() -> None:
    # The pooling store's SQLAlchemy and Alembic took 0.3-2 s of every `zq` start-up.
    code = ("import sys; from zq.cli import main\n"
            "try:\n    main(['stats', '--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = {'sqlalchemy', 'alembic', 'pyspark', 'pyarrow', 'matplotlib'} "
            "& set(sys.modules)\nsys.exit(sorted(heavy) or 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_zq("--version", capsys=capsys)
    assert status == 0 and out.startswith("zq 0.")


def test_python_dash_m_zq_runs_the_same_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "zq", "serve", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0
    assert "usage: zq serve" in result.stdout


# -- configuration precedence: defaults < file < environment < flags ---------

def write_config(path: Path) -> Path:
    path.write_text(
        '[server]\nport = 1111\nworkers = 3\n'
        '[storage]\nuri = "sqlite:///from-file.db"\n'
        '[limits]\nmax_message_ttl = 7200\n'
    )
    return path


def effective(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    status, out, err = run_zq("config", *argv, capsys=capsys)
    assert status == 0, err
    return tomllib.loads(out)


def test_config_prints_defaults_as_valid_toml(capsys: pytest.CaptureFixture[str]) -> None:
    shown = effective(capsys)
    assert shown["server"] == {
        "host": "127.0.0.1", "port": 8888, "workers": 2, "threads": 4, "timeout": 30,
        "body_timeout": 30.0, "metadata_cache": 0.0, "max_waiting_claims": 4096,
        "wait_recheck_interval": 1.0,
    }
    assert shown["limits"]["max_messages_per_claim_or_pop"] == 20
    assert shown["gc"]["interval"] == 30.0
    assert shown["storage"]["uri"] == ""


def test_file_overrides_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = effective(capsys, "--config", str(write_config(tmp_path / "zq.toml")))
    assert shown["server"]["port"] == 1111
    assert shown["server"]["host"] == "127.0.0.1"  # untouched settings keep defaults
    assert shown["limits"]["max_message_ttl"] == 7200
    assert shown["storage"]["uri"] == "sqlite:///from-file.db"


def test_zq_config_variable_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZQ_CONFIG", str(write_config(tmp_path / "zq.toml")))
    assert effective(capsys)["server"]["port"] == 1111


def test_environment_overrides_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZQ_SERVER_PORT", "2222")
    monkeypatch.setenv("ZQ_STORAGE", "sqlite:///from-env.db")
    monkeypatch.setenv("ZQ_GC_INTERVAL", "2.5")
    shown = effective(capsys, "--config", str(write_config(tmp_path / "zq.toml")))
    assert shown["server"]["port"] == 2222
    assert shown["server"]["workers"] == 3  # from the file, not overridden
    assert shown["storage"]["uri"] == "sqlite:///from-env.db"
    assert shown["gc"]["interval"] == 2.5


def test_flags_override_environment_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZQ_SERVER_PORT", "2222")
    monkeypatch.setenv("ZQ_STORAGE", "sqlite:///from-env.db")
    args = cli.build_parser().parse_args([
        "serve", "--config", str(write_config(tmp_path / "zq.toml")),
        "--port", "3333", "--storage", "sqlite:///from-flag.db",
    ])
    config = serve_command.config_for(args)
    assert config.server.port == 3333
    assert config.storage.uri == "sqlite:///from-flag.db"
    assert config.server.workers == 3  # no --workers flag: the file's value stays
    assert config.limits.max_message_ttl == 7200


def test_config_redacts_the_storage_password(capsys: pytest.CaptureFixture[str]) -> None:
    shown = effective(capsys, "--storage", "postgresql://zq:s3cret@db.example.com/zq")
    assert shown["storage"]["uri"] == "postgresql://zq:***@db.example.com/zq"


def test_config_masks_every_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZQ_SIGNED_URLS_SECRET_KEY", "hmac-s3cret")
    monkeypatch.setenv("ZQ_POOLING_MANAGEMENT", "postgresql://zq:m/gmt@s3cret@db/zq_management")
    status, out, _ = run_zq("config", "--storage", "redis://:r3d:s3cret@cache/0", capsys=capsys)
    assert status == 0
    assert "s3cret" not in out
    shown = tomllib.loads(out)
    assert shown["signed_urls"]["secret_key"] == "***"
    assert shown["pooling"]["management"] == "postgresql://zq:***@db/zq_management"
    assert shown["storage"]["uri"] == "redis://:***@cache/0"


def test_config_shows_an_unset_secret_as_unset(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_zq("config", capsys=capsys)
    assert status == 0 and tomllib.loads(out)["signed_urls"]["secret_key"] == ""


def test_serve_runs_granian_rsgi_workers_from_the_config() -> None:
    # RSGI: zq.buffered_wsgi receives requests on the event loop and runs
    # the app on [server] threads of its own (tests/unit/test_buffered_wsgi.py).
    args = cli.build_parser().parse_args(["serve", "--workers", "5", "--host", "::1"])
    settings = granian_settings(serve_command.config_for(args), 8888)
    assert settings["interface"] == "rsgi"
    assert settings["workers"] == 5 and settings["blocking_threads"] == 1
    assert (settings["address"], settings["port"]) == ("::1", 8888)


# -- errors: one line, no traceback, exit 1 (2 for a bad command line) ---------

def assert_one_line_error(status: int, err: str, *fragments: str) -> None:
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("zq: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(("entry", "says"), [
    ("http://127.0.0.1:19110", "is not HOST[:PORT]"),
    ("127.0.0.1:abc", "has no valid port"),
])
def test_a_malformed_allowed_hosts_entry_is_refused_when_the_configuration_is_read(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], entry: str,
        says: str) -> None:
    # It used to pass here and kill the notifier process of a running server
    # (zq serve refuses to start too: tests/e2e/test_notifier_supervision.py).
    monkeypatch.setenv("ZQ_NOTIFICATIONS_ALLOWED_HOSTS", f"hooks.example.org, {entry}")
    status, out, err = run_zq("config", capsys=capsys)
    assert_one_line_error(status, err, "notifications.allowed_hosts entry", repr(entry), says)
    assert out == ""


def test_missing_config_file(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_zq("config", "--config", "/nonexistent/zq.toml", capsys=capsys)
    assert_one_line_error(status, err, "/nonexistent/zq.toml", "does not exist")


def test_invalid_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[server\nport = 1\n")
    status, _, err = run_zq("serve", "--config", str(bad), capsys=capsys)
    assert_one_line_error(status, err, "not valid TOML")


def test_unknown_setting_in_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[server]\nprot = 1\n")
    status, _, err = run_zq("gc", "--config", str(bad), capsys=capsys)
    assert_one_line_error(status, err, "unknown setting server.prot")


def test_bad_environment_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZQ_SERVER_WORKERS", "many")
    status, _, err = run_zq("serve", capsys=capsys)
    assert_one_line_error(status, err, "server.workers", "expected int")


def test_serve_with_a_short_encryption_key_fails_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    short = "c2hvcnQga2V5"  # base64 of 9 bytes
    monkeypatch.setenv("ZQ_ENCRYPTION_KEYS", f"k1:{short}")
    status, _, err = run_zq("serve", capsys=capsys)
    assert_one_line_error(status, err, "key 'k1' is 9 bytes; AES-256 needs 32")
    assert short not in err


@pytest.mark.parametrize(("argv", "fragment"), [
    (["serve", "--port", "70000"], "--port 70000: port must be 0..65535"),
    (["serve", "--port", "99999"], "--port 99999: port must be 0..65535"),
    (["serve", "--workers", "0"], "--workers 0: workers must be at least 1"),
])
def test_impossible_server_flags_are_a_bad_command_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_zq(*argv, capsys=capsys)
    assert status == 2, err
    assert err.startswith("usage: zq serve ")
    assert f"zq serve: error: {fragment}" in err and "Traceback" not in err


@pytest.mark.parametrize(("variable", "value", "fragment"), [
    ("ZQ_SERVER_PORT", "70000", "port must be 0..65535"),
    ("ZQ_SERVER_WORKERS", "0", "workers must be at least 1"),
])
def test_impossible_server_settings_from_the_environment_fail_the_command(
    variable: str, value: str, fragment: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Not the command line's fault: exit status 1, no usage.
    monkeypatch.setenv(variable, value)
    status, _, err = run_zq("serve", capsys=capsys)
    assert_one_line_error(status, err, fragment)


@pytest.mark.parametrize("argv", [
    ["gc", "--bogus"], ["config", "extra"], ["db", "upgrade", "--nope"],
    ["events", "export", "--to", "d", "--bogus"], ["stats", "--events", "d", "--bogus"],
    ["token", "list", "extra"], ["redrive", "q", "--project", "p", "--bogus"],
])
def test_unknown_arguments_show_the_subcommands_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_zq(*argv, capsys=capsys)
    command = " ".join(word for word in argv[:2] if not word.startswith("-")
                       and word in {"gc", "config", "db", "upgrade", "events", "export",
                                    "stats", "token", "list", "redrive"})
    assert status == 2
    assert err.startswith(f"usage: zq {command} "), err
    assert f"zq {command}: error: unrecognized arguments: " in err


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_description_is_wrapped(
    words: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    status, out, _ = run_zq(*words, "--help", capsys=capsys)
    assert status == 0
    description = out.split("\n\n")[1]
    too_long = [line for line in description.splitlines() if len(line) > 79]
    assert too_long == [], f"zq {' '.join(words)} --help: description not wrapped"


def test_unsupported_storage_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_zq("gc", "--storage", "ftp://example.com/x", capsys=capsys)
    assert_one_line_error(status, err, "ftp://example.com/x", "Unsupported storage URI scheme")


@pytest.mark.parametrize("command", [["gc"], ["serve"], ["db", "upgrade"]], ids=" ".join)
def test_unreachable_storage(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # Nothing listens on port 1; the password must not be shown.
    uri = "postgresql://zq:s3cret@127.0.0.1:1/zq"
    status, _, err = run_zq(*command, "--storage", uri, capsys=capsys)
    assert_one_line_error(status, err, "postgresql://zq:***@127.0.0.1:1/zq")
    assert "s3cret" not in err


def test_db_upgrade_on_a_non_sql_storage_says_there_is_nothing_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run_zq("db", "upgrade", "--storage", "mongomock://localhost/zq",
                            capsys=capsys)
    assert status == 0
    assert out.strip() == "mongomock://localhost/zq is a mongomock storage: " \
        "it has no schema, nothing to migrate."


@pytest.mark.parametrize("argv", [
    [], ["bogus"], ["serve", "--port", "eighty"], ["serve", "--nope"], ["db"],
])
def test_bad_command_lines_exit_2_with_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_zq(*argv, capsys=capsys)
    assert status == 2
    assert "usage: zq" in err and "error:" in err
    assert "Traceback" not in err


# -- pooling: serve flags, db upgrade --management, gc over every pool ---------

def test_pooling_flags_override_the_config_file(tmp_path: Path) -> None:
    config_file = tmp_path / "zq.toml"
    config_file.write_text('[pooling]\nenabled = false\nmanagement = "sqlite:///file.db"\n')
    args = cli.build_parser().parse_args([
        "serve", "--config", str(config_file), "--pooling",
        "--management", "postgresql://zq@db/zq_management",
    ])
    config = serve_command.config_for(args)
    assert config.pooling.enabled is True
    assert config.pooling.management == "postgresql://zq@db/zq_management"
    config_file.write_text("[pooling]\nenabled = true\n")
    args = cli.build_parser().parse_args(["serve", "--config", str(config_file), "--no-pooling"])
    assert serve_command.config_for(args).pooling.enabled is False


def test_management_without_pooling_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_zq("serve", "--port", "0", "--management", "sqlite:///m.db",
                            capsys=capsys)
    assert_one_line_error(status, err, "--management", "add --pooling")


def test_serve_with_an_unreachable_management_store_fails_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = "postgresql://zq:s3cret@127.0.0.1:1/zq_management"
    status, _, err = run_zq("serve", "--port", "0", "--pooling", "--management", uri,
                            capsys=capsys)
    assert_one_line_error(status, err, "management store postgresql://zq:***@127.0.0.1:1/")
    assert "s3cret" not in err


def test_db_upgrade_management_alone_migrates_only_the_management_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from zq.pooling import migrate

    management = f"sqlite:///{tmp_path / 'management.sqlite3'}"
    status, out, err = run_zq("db", "upgrade", "--management", management, capsys=capsys)
    assert status == 0, err
    head = migrate.head_revision()
    assert out == f"Created the zq management schema in {management} (revision {head}).\n"
    assert not (tmp_path / "data" / "zq" / "zq.sqlite3").exists()  # storage untouched
    status, out, _ = run_zq("db", "upgrade", "--management", management, capsys=capsys)
    assert status == 0
    assert out == f"{management} is already at the latest management schema revision {head}.\n"


def test_db_upgrade_management_without_uri_uses_the_configured_store_and_storage_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from zq.pooling import migrate as management_migrate
    from zq.storage.sql import migrate as storage_migrate

    management = f"sqlite:///{tmp_path / 'configured.sqlite3'}"
    storage = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    config_file = tmp_path / "zq.toml"
    config_file.write_text(f'[pooling]\nmanagement = "{management}"\n')
    status, out, err = run_zq("db", "upgrade", "--management", "--config", str(config_file),
                              "--storage", storage, capsys=capsys)
    assert status == 0, err
    assert out.splitlines() == [
        f"Created the zq schema in {storage} (revision {storage_migrate.head_revision()}).",
        f"Created the zq management schema in {management} "
        f"(revision {management_migrate.head_revision()}).",
    ]


def test_db_upgrade_says_from_which_revision_it_upgraded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from zq.commands.db import migrate_with

    revisions = iter(["m0001", "m0002"])
    migrate_with("sqlite:///x.db", "management schema", lambda _uri: next(revisions),
                 lambda _uri: None)
    assert capsys.readouterr().out == (
        "Upgraded sqlite:///x.db from management schema revision m0001 to m0002.\n"
    )


@pytest.mark.parametrize(("uri", "fragment"), [
    ("redis://127.0.0.1:6379", "must be an SQL database, not redis"),
    ("postgresql://zq:s3cret@127.0.0.1:1/m", "cannot migrate postgresql://zq:***@127.0.0.1:1/m"),
])
def test_db_upgrade_management_failures_are_one_line(
    uri: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_zq("db", "upgrade", "--management", uri, capsys=capsys)
    assert_one_line_error(status, err, fragment)
    assert "s3cret" not in err


def expire_one_message(uri: str) -> None:
    """Post a message of ttl 60 at a clock two minutes in the past: it is expired now."""
    import time

    from zq.clock import ManualClock
    from zq.events import fingerprint
    from zq.storage import open_storage
    from zq.storage.records import NewMessage

    storage = open_storage(uri, clock=ManualClock(time.time() - 120))
    try:
        storage.messages.post("p", "q", [NewMessage("{}", 60, 0, fingerprint("{}"))],
                              client_id=None)
    finally:
        storage.close()


def test_gc_with_pooling_collects_every_pool_and_reports_a_failing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    management = f"sqlite:///{tmp_path / 'management.sqlite3'}"
    one, two = (f"sqlite:///{tmp_path / name}.sqlite3" for name in ("one", "two"))
    down = "postgresql://zq:s3cret@127.0.0.1:1/zq"
    register_pools(management, {"one": one, "two": two, "down": down})
    expire_one_message(two)
    status, out, err = run_zq("gc", "--pooling", "--management", management, capsys=capsys)
    assert status == 1
    assert out.splitlines() == [
        f"Removed 0 expired message(s) and 0 expired claim(s) from pool 'one' ({one}).",
        f"Removed 1 expired message(s) and 0 expired claim(s) from pool 'two' ({two}).",
    ]
    (line,) = err.strip().splitlines()
    assert line.startswith("zq: error: pool 'down' (postgresql://zq:***@127.0.0.1:1/zq): ")
    assert "s3cret" not in err


def test_gc_with_pooling_and_no_pools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_zq("gc", "--pooling", capsys=capsys)  # default management store
    assert status == 0
    assert out == "No pools are registered: nothing to collect.\n"
    assert (tmp_path / "data" / "zq" / "zq-management.sqlite3").is_file()


@pytest.mark.parametrize(("storage", "shown"), [
    ("sqlite://relative.db", "write sqlite:///relative.db"),
    ("/var/tmp/zq.sqlite3", "write sqlite:////var/tmp/zq.sqlite3"),
    ("zq.sqlite3", "write sqlite:///zq.sqlite3"),
])
def test_an_sqlite_path_written_wrong_shows_the_right_form(
    storage: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["serve", "--port", "0"], ["gc"], ["db", "upgrade"]):
        status, _, err = run_zq(*command, "--storage", storage, capsys=capsys)
        assert status == 1
        assert shown in err and len(err.strip().splitlines()) == 1, err


def test_a_storage_in_a_missing_directory_is_refused_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    status, _, err = run_zq("db", "upgrade", "--storage", f"sqlite:///{missing}/zq.sqlite3",
                            capsys=capsys)
    assert status == 1 and "does not exist" in err
    assert not missing.exists()


def test_a_misspelled_variable_is_a_warning_naming_the_closest_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZQ_SERVER_PROT", "9000")
    monkeypatch.setenv("ZQ_STORGE", "sqlite:///x.db")
    monkeypatch.setenv("ZQ_TEST_BACKENDS", "sqlite")  # the test suite's own: no warning
    status, out, err = run_zq("config", capsys=capsys)
    assert status == 0 and tomllib.loads(out)["server"]["port"] == 8888
    warnings = err.strip().splitlines()
    assert len(warnings) == 2, err
    assert "ZQ_SERVER_PROT" in warnings[0] and "ZQ_SERVER_PORT" in warnings[0]
    assert "ZQ_STORGE" in warnings[1] and "ZQ_STORAGE" in warnings[1]


def test_every_documented_variable_is_read_without_a_warning() -> None:
    import re

    from zq.config import unknown_variables

    documented = set(re.findall(r"`(ZQ_[A-Z_]+)`", (ROOT / "README.md").read_text()))
    assert {"ZQ_CONFIG", "ZQ_STORAGE", "ZQ_LIMITS_MAX_MESSAGE_TTL"} <= documented
    assert unknown_variables(dict.fromkeys(documented - {"ZQ_SECTION_NAME"}, "")) == []


def test_serve_refuses_a_storage_flag_that_pooling_would_ignore(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run_zq("serve", "--pooling", "--storage", "redis://127.0.0.1:6379",
                            capsys=capsys)
    assert status == 1
    assert "--storage is not used with pooling" in err and "--no-pooling" in err


def test_gc_reports_the_expired_claims_it_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    from zq.clock import ManualClock
    from zq.events import fingerprint
    from zq.storage import open_storage
    from zq.storage.records import NewMessage
    from zq.storage.sql import migrate

    uri = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    migrate.upgrade(uri)
    # Two minutes ago: a message of ttl 3600 claimed for 60 s (the claim has
    # lapsed, the message is alive) and one of ttl 60 (expired).
    storage = open_storage(uri, clock=ManualClock(time.time() - 120))
    try:
        storage.messages.post("p", "q", [NewMessage("{}", 3600, 0, fingerprint("{}"))],
                              client_id=None)
        storage.claims.create("p", "q", ttl=60, grace=0, limit=1, client_id=None,
                              rules=DeliveryRules(dead_letter=None))
        storage.messages.post("p", "q", [NewMessage("{}", 60, 0, fingerprint("{}"))],
                              client_id=None)
    finally:
        storage.close()
    status, out, _ = run_zq("gc", "--storage", uri, capsys=capsys)
    assert status == 0
    assert out.strip() == f"Removed 1 expired message(s) and 1 expired claim(s) from {uri}."
    # An expired subscription (ttl 60, two minutes ago) is reported when removed.
    storage = open_storage(uri, clock=ManualClock(time.time() - 120))
    try:
        storage.subscriptions.create("p", "q", "http://h/x", 60, {})
    finally:
        storage.close()
    status, out, _ = run_zq("gc", "--storage", uri, capsys=capsys)
    assert out.strip() == (f"Removed 0 expired message(s) and 0 expired claim(s) from {uri}; "
                           "removed 1 expired subscription(s).")


def test_events_export_without_pyarrow_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import now raises ImportError
    monkeypatch.delitem(sys.modules, "zq.analytics.export", raising=False)
    status, out, err = run_zq("events", "export", "--to", str(tmp_path / "ds"), capsys=capsys)
    assert_one_line_error(status, err, "zq events export needs the spark extra",
                          "pyarrow", "pip install 'zq[spark]'")
    assert out == ""


@pytest.mark.parametrize("under", ["", "sub"])
def test_stats_out_naming_a_file_is_one_plain_line_before_any_work(
    under: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "report"
    taken.write_text("not a directory")
    out = taken / under if under else taken
    # The dataset does not even exist: --out is checked first.
    status, _, err = run_zq("stats", "--events", str(tmp_path / "events"), "--out", str(out),
                            capsys=capsys)
    assert_one_line_error(status, err, f"--out {out}")
    assert "Errno" not in err and "FileExistsError" not in err
    assert ("is a file: name a directory" if not under else f"{taken} is a file") in err


SQL_SERVERS = [kind for kind in ("postgresql", "mariadb")
               if kind in (__import__("os").environ.get("ZQ_TEST_BACKENDS") or kind)]


@pytest.mark.parametrize("kind", SQL_SERVERS)
def test_an_unmigrated_server_database_names_the_command_with_its_uri(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.backends import empty_database
    from zq.storage.uri import redact

    with empty_database(kind) as made:
        # As a user writes it: no SQLAlchemy driver in the scheme.
        uri = made.replace("+psycopg", "").replace("mysql+pymysql", "mysql")
        status, _, err = run_zq("gc", "--storage", uri, capsys=capsys)
    # Run literally, a bare `zq db upgrade` would migrate the default SQLite file.
    assert_one_line_error(status, err, f"run `zq db upgrade --storage {redact(uri)}`")
    assert "+psycopg" not in err and "+pymysql" not in err
