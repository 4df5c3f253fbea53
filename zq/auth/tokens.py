"""Bearer tokens for ``[auth] strategy = "token"``: the tokens file and ``zq token``.

The tokens file is JSON::

    {"tokens": [{"id": "tok-1a2b3c4d", "sha256": "<hex>", "project": "p",
                 "roles": ["admin"], "created": "2025-01-01T00:00:00Z",
                 "description": "ci"}]}

Only the SHA-256 of each token is stored. A token is 256 random bits
(``secrets.token_urlsafe(32)``), so a plain hash cannot be brute-forced and
a slow KDF would only cost CPU on every request. Looking a presented token
up by its hash means no comparison ever runs over secret bytes; what a
timing difference could reveal is the hash, which does not give the token.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import secrets
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zq.auth.identity import parse_roles
from zq.config import ConfigError, load_config

TOKEN_PREFIX = "zqt_"  # makes leaked tokens easy to spot for secret scanners


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One token of the file, without the token itself."""

    id: str
    project: str
    roles: frozenset[str]


def hash_token(token: str) -> str:
    """The hex SHA-256 stored for ``token``."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenFileError(ConfigError):
    """The tokens file is missing or malformed."""


def read_entries(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The raw entries of a tokens file; [] when it does not exist."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    try:
        document = json.loads(text)
        entries = document["tokens"]
        if not isinstance(entries, list):
            raise TypeError("tokens is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise TokenFileError(f"Tokens file {path} is malformed: {exc}.") from None
    return entries


def _parse(path: str | os.PathLike[str], entries: list[dict[str, Any]]) -> dict[str, TokenEntry]:
    by_hash: dict[str, TokenEntry] = {}
    for number, raw in enumerate(entries, 1):
        try:
            digest, project = raw["sha256"], raw["project"]
            roles = raw.get("roles", [])
            if not (isinstance(digest, str) and isinstance(project, str) and project):
                raise TypeError("sha256 and project must be non-empty strings")
            if not isinstance(roles, list):
                raise TypeError("roles must be a list")
        except (KeyError, TypeError) as exc:
            raise TokenFileError(f"Tokens file {path}, entry {number}: {exc}.") from None
        by_hash[digest.lower()] = TokenEntry(
            str(raw.get("id", f"entry-{number}")), project, parse_roles(",".join(roles))
        )
    return by_hash


class TokenStore:
    """The tokens of one file, reloaded when the file changes.

    Reloading on change means ``zq token add`` and ``zq token revoke``
    take effect on a running server without a restart.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._by_hash: dict[str, TokenEntry] = {}
        if not self.path.is_file():
            raise TokenFileError(
                f"Tokens file {self.path} does not exist; create one with "
                f"`zq token add --file {self.path} --project P`."
            )
        self._refresh()

    def lookup(self, token: str) -> TokenEntry | None:
        """The entry of a presented token, or None when it is unknown."""
        self._refresh()
        return self._by_hash.get(hash_token(token))

    def _refresh(self) -> None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            st = None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino) if st else (0, 0, 0)
        if stamp == self._stamp:
            return
        with self._lock:
            # A deleted or broken file revokes every token: fail closed.
            by_hash = _parse(self.path, read_entries(self.path)) if st else {}
            self._by_hash, self._stamp = by_hash, stamp


def issue(
    path: str | os.PathLike[str],
    project: str,
    roles: list[str] | tuple[str, ...] = (),
    description: str = "",
) -> tuple[str, str]:
    """Add a new token for ``project`` to the file; returns (token id, token).

    The token itself is not stored anywhere: show it once, it cannot be
    recovered later.
    """
    if not project:
        raise ConfigError("A token needs a project.")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token_id = f"tok-{secrets.token_hex(4)}"
    entries = read_entries(path)
    entries.append({
        "id": token_id,
        "sha256": hash_token(token),
        "project": project,
        "roles": sorted(parse_roles(",".join(roles))),
        "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "description": description,
    })
    _write(path, entries)
    return token_id, token


def revoke(path: str | os.PathLike[str], token_id: str) -> bool:
    """Remove the token with ``token_id``; False when there was none."""
    entries = read_entries(path)
    kept = [e for e in entries if e.get("id") != token_id]
    if len(kept) == len(entries):
        return False
    _write(path, kept)
    return True


def _write(path: str | os.PathLike[str], entries: list[dict[str, Any]]) -> None:
    # Write a private temporary file and rename it over the old one, so a
    # server reloading the file never sees half of it.
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump({"tokens": entries}, fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- zq token ---------------------------------------------------------------

TOKEN_DESCRIPTION = """\
Manage the tokens file of [auth] strategy = "token": each token is a random
secret that a client sends as `X-Auth-Token: TOKEN` (or `Authorization:
Bearer TOKEN`) and that acts in one project with some roles. Only a hash of
each token is stored, so `zq token add` shows a token once and never again.
A running server reads the file again when it changes."""

TOKEN_EPILOG = """\
examples:
  zq token add --project demo --file /etc/zq/tokens.json
  zq token add --project ops --role admin --description "pool admin"
  zq token list
  zq token revoke tok-3f2a9c1e

Without --file, the file is [auth] tokens_file of the configuration
(--config FILE, $ZQ_CONFIG or $ZQ_AUTH_TOKENS_FILE)."""

ACTIONS = {
    "add": ("create a token and print it once",
            "Create a token for a project (and roles), store its hash and print the\n"
            "token once: it cannot be shown again.",
            "  zq token add --project demo\n"
            "  zq token add --project ops --role admin --description \"pool admin\"\n"
            "  zq token add --project demo --file /etc/zq/tokens.json"),
    "list": ("list tokens (ids, projects, roles; never tokens)",
             "List the tokens of the file, one per line: id, project, roles, creation\n"
             "time and description, tab-separated. The tokens themselves are never shown.",
             "  zq token list\n"
             "  zq token list --file /etc/zq/tokens.json"),
    "revoke": ("remove a token by its id",
               "Remove a token by the id `zq token add` and `zq token list` show; a\n"
               "server stops accepting it as soon as it reads the file again.",
               "  zq token revoke tok-3f2a9c1e\n"
               "  zq token revoke tok-3f2a9c1e --file /etc/zq/tokens.json"),
}


def register(subparsers: Any) -> None:
    """Add ``zq token add|list|revoke`` to the ``zq`` command line."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = subparsers.add_parser(
        "token", help="manage bearer tokens ([auth] strategy = \"token\")",
        description=TOKEN_DESCRIPTION, epilog=TOKEN_EPILOG, formatter_class=raw,
    )
    commands = parser.add_subparsers(title="token commands", metavar="ACTION", required=True)
    added = {}
    for action, (summary, description, examples) in ACTIONS.items():
        added[action] = commands.add_parser(
            action, help=summary, description=description,
            epilog=f"examples:\n{examples}", formatter_class=raw,
        )

    add = added["add"]
    add.add_argument("--project", required=True, help="the project the token acts in")
    add.add_argument("--role", action="append", default=[], metavar="ROLE",
                     help="a role of the token, e.g. admin (repeatable)")
    add.add_argument("--description", default="", help="a note shown by `zq token list`")
    add.set_defaults(handler=_add)
    added["list"].set_defaults(handler=_list)
    added["revoke"].add_argument("token_id", metavar="ID")
    added["revoke"].set_defaults(handler=_revoke)
    for action_parser in added.values():
        _file_arguments(action_parser)


def _file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", metavar="FILE",
                        help="tokens file (default: [auth] tokens_file of the configuration)")
    parser.add_argument("--config", metavar="FILE",
                        help="TOML configuration file (default: $ZQ_CONFIG)")


def _tokens_file(args: argparse.Namespace) -> str:
    path = args.file or load_config(args.config).auth.tokens_file
    if not path:
        raise ConfigError("No tokens file: pass --file or set [auth] tokens_file.")
    return path


def _add(args: argparse.Namespace) -> int:
    token_id, token = issue(_tokens_file(args), args.project, args.role, args.description)
    print(f"id:      {token_id}\nproject: {args.project}\ntoken:   {token}")
    print("Store the token now: only its hash is kept, it cannot be shown again.")
    return 0


def _list(args: argparse.Namespace) -> int:
    for entry in read_entries(_tokens_file(args)):
        roles = ",".join(entry.get("roles", [])) or "-"
        print(f"{entry.get('id')}\t{entry.get('project')}\t{roles}\t"
              f"{entry.get('created', '')}\t{entry.get('description', '')}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    if not revoke(_tokens_file(args), args.token_id):
        raise ConfigError(f"No token with id {args.token_id!r}.")
    print(f"revoked {args.token_id}")
    return 0
