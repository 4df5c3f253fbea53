"""Configuration: one typed object, built once at start-up.

Sources, later ones winning: built-in defaults, a TOML file (``--config``
or ``ZQ_CONFIG``), ``ZQ_*`` environment variables, command-line flags.
Each field is addressed as ``section.name`` in the file and as
``ZQ_SECTION_NAME`` in the environment (``limits.max_message_ttl`` is
``[limits] max_message_ttl`` and ``ZQ_LIMITS_MAX_MESSAGE_TTL``); the storage
URI is also ``ZQ_STORAGE``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zq.allowed_hosts import parse_entries


class ConfigError(ValueError):
    """The configuration file or environment holds something unusable."""


def default_data_dir() -> Path:
    """Where the embedded SQLite database lives when no storage is given."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "zq"


# orjson writes at most 254 levels, and a response may wrap a stored
# document in a few more (a detailed queue listing: 3): room is left.
MAX_JSON_DEPTH = 200


@dataclass(frozen=True)
class Limits:
    """Every limit of the Zaqar v2 API (Zaqar's defaults)."""

    max_queues_per_page: int = 20
    max_messages_per_page: int = 20
    max_messages_per_claim_or_pop: int = 20
    default_page_size: int = 10
    max_queue_metadata: int = 65536
    max_messages_post_size: int = 262144
    max_project_id_length: int = 256
    max_queue_name_length: int = 64
    min_message_ttl: int = 60
    max_message_ttl: int = 1209600
    default_message_ttl: int = 3600
    max_message_delay: int = 900
    default_message_delay: int = 0
    min_claim_ttl: int = 60
    max_claim_ttl: int = 43200
    default_claim_ttl: int = 300
    min_claim_grace: int = 60
    max_claim_grace: int = 43200
    default_claim_grace: int = 60
    max_ids_per_request: int = 20
    max_request_body: int = 1048576
    # Levels of nested arrays and objects in a request body, the post's
    # envelope included (a message body gets 3 fewer).
    max_json_depth: int = 64
    # Subscriptions (Zaqar's max_subscriptions_per_page, MIN_SUBSCRIPTION_TTL,
    # default_subscription_ttl). Zaqar bounds a ttl only by the year 9999;
    # zq by a configurable maximum (default: 2**31 - 1 s, about 68 years).
    max_subscriptions_per_page: int = 20
    min_subscription_ttl: int = 60
    max_subscription_ttl: int = 2147483647
    default_subscription_ttl: int = 3600
    max_subscriber_length: int = 2048  # characters of a subscriber URI
    # Seconds a claim may wait for a message (``POST .../claims?wait=S``, zq.waiting).
    max_claim_wait: int = 20

    def __post_init__(self) -> None:
        if not 1 <= self.max_json_depth <= MAX_JSON_DEPTH:
            raise ConfigError(
                f"limits.max_json_depth must be between 1 and {MAX_JSON_DEPTH}, "
                f"got {self.max_json_depth}."
            )


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8888
    workers: int = 2
    threads: int = 4
    timeout: int = 30
    body_timeout: float = 30.0  # seconds a request body may take to arrive, from its head on
    metadata_cache: float = 0.0  # seconds a worker keeps unversioned metadata it read; 0: off
    # Waiting claims (zq.waiting): at most this many per worker (more answer
    # at once, as without ``wait``), and granian takes this many requests
    # per worker on top of its usual 512, so waiting ones never starve others.
    max_waiting_claims: int = 4096
    # Seconds between a worker's looks at the queues its claims wait on.
    wait_recheck_interval: float = 1.0

    def problem(self) -> str | None:
        """What the server could not run with, as one sentence; None when nothing."""
        if not 0 <= self.port <= 65535:
            return f"port must be 0..65535, got {self.port}."
        if self.workers < 1:
            return f"workers must be at least 1, got {self.workers}."
        if self.threads < 1:
            return f"threads must be at least 1, got {self.threads}."
        if not self.body_timeout > 0:
            return f"body_timeout must be above 0 seconds, got {self.body_timeout}."
        if not self.wait_recheck_interval > 0:
            return ("wait_recheck_interval must be above 0 seconds, got "
                    f"{self.wait_recheck_interval}.")
        return None


# Field metadata of settings that hold secrets, which ``zq config`` and
# messages show masked: the whole value, a URI's password, or the keys of an
# "id:key,..." list (the ids stay).
MASK_VALUE, MASK_URI_PASSWORD, MASK_KEYS = "value", "uri_password", "keys"
SECRET = {"secret": MASK_VALUE}
SECRET_URI = {"secret": MASK_URI_PASSWORD}
SECRET_KEYS = {"secret": MASK_KEYS}


@dataclass(frozen=True)
class StorageConfig:
    # empty: SQLite file in the default data directory
    uri: str = field(default="", metadata=SECRET_URI)

    def resolved_uri(self) -> str:
        """The URI to open: the configured one, or the embedded default."""
        if self.uri:
            return self.uri
        return f"sqlite:///{default_data_dir() / 'zq.sqlite3'}"


@dataclass(frozen=True)
class RedisConfig:
    """Settings of the Redis storage driver; see docs/high-availability.md."""

    # After each write script, WAIT for this many replicas to have it; a
    # write they do not confirm within wait_timeout answers 503. 0: off.
    wait_replicas: int = 0
    wait_timeout: float = 1.0  # seconds
    # Script calls of concurrent requests of one worker process share one
    # round trip (a pipeline), each script still atomic on its own; not on
    # a Redis Cluster (refused there). See docs/redis.md, "Coalesced script calls".
    coalesce: bool = False
    # Seconds a batch's leader waits for more calls before it sends (0: only
    # the calls that queued while the previous round trip ran).
    coalesce_window: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.coalesce_window <= 0.1:
            raise ConfigError("redis.coalesce_window: must be 0 to 0.1 seconds, got "
                              f"{self.coalesce_window!r}.")
        if self.wait_replicas < 0:
            raise ConfigError(f"redis.wait_replicas: must be 0 or more, got {self.wait_replicas}.")
        if not self.wait_timeout > 0:
            # WAIT with a timeout of 0 blocks until the replicas answer, forever if none does.
            raise ConfigError("redis.wait_timeout: must be above 0 seconds, got "
                              f"{self.wait_timeout!r}.")

    @property
    def wait_timeout_ms(self) -> int:
        """The timeout as WAIT takes it: whole milliseconds, at least 1 (0 is forever)."""
        return max(1, round(self.wait_timeout * 1000))


@dataclass(frozen=True)
class SqlConfig:
    """Settings of the SQL storage driver; see docs/storage-sql.md, "Group commit"."""

    # Concurrent writes of one worker process share one transaction and one
    # WAL flush, each in its own savepoint, answered after the shared commit.
    group_commit: bool = False
    # Seconds a group's leader waits for more writes before it starts (0:
    # only the writes that queued while the previous commit ran).
    group_commit_window: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.group_commit_window <= 0.1:
            raise ConfigError("sql.group_commit_window: must be 0 to 0.1 seconds, got "
                              f"{self.group_commit_window!r}.")


@dataclass(frozen=True)
class GcConfig:
    interval: float = 30.0  # seconds between collections inside the server; 0 disables


AUTH_STRATEGIES = ("none", "token", "keystone")
LOG_FORMATS = ("auto", "json", "text", "console")


@dataclass(frozen=True)
class AuthConfig:
    """Who a request comes from; see docs/security.md."""

    # none: trust X-Project-ID and X-Roles (behind a gateway, or local use);
    # token: bearer tokens from tokens_file; keystone: keystonemiddleware.
    strategy: str = "none"
    tokens_file: str = ""  # JSON file written by ``zq token add``
    keystone_config_file: str = ""  # oslo.config file with [keystone_authtoken]

    def __post_init__(self) -> None:
        _choice(self.strategy, AUTH_STRATEGIES, "auth.strategy")


@dataclass(frozen=True)
class SignedUrlsConfig:
    # HMAC-SHA256 key of pre-signed URLs; empty disables POST .../share.
    secret_key: str = field(default="", metadata=SECRET)
    max_expires: int = 7 * 86400  # seconds a signature may be valid for, at most


@dataclass(frozen=True)
class LogConfig:
    level: str = "INFO"
    # auto: console on a terminal, json otherwise; json: one object per line;
    # text: key=value; console: time, level and message for people to read.
    format: str = "auto"

    def __post_init__(self) -> None:
        _choice(self.format, LOG_FORMATS, "log.format")


@dataclass(frozen=True)
class PoolingConfig:
    """Pools and flavors: queues spread over several storage backends."""

    enabled: bool = False
    # management store URI; empty: SQLite in the data directory
    management: str = field(default="", metadata=SECRET_URI)

    def resolved_management(self) -> str:
        """The management store URI to open: the configured one, or the embedded default."""
        if self.management:
            return self.management
        return f"sqlite:///{default_data_dir() / 'zq-management.sqlite3'}"


ENCRYPTION_KEY_BYTES = 32  # AES-256
MIN_FINGERPRINT_KEY_BYTES = 32
_KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class EncryptionConfig:
    """Keys of queues with ``_enable_encrypt_messages``; see docs/encryption.md.

    Checked once the configuration is loaded from every source (keys in the
    file and the fingerprint key in the environment is fine), so a bad key
    stops ``zq serve`` before any worker starts.
    """

    # "id:BASE64,id2:BASE64": AES-256 keys (32 bytes each) by key id; empty: none,
    # and no queue may enable encryption.
    keys: str = field(default="", metadata=SECRET_KEYS)
    active_key: str = ""  # id of the key new messages use; empty: the only key
    # base64, at least 32 bytes: HMAC key of the body fingerprints of encrypted queues.
    fingerprint_key: str = field(default="", metadata=SECRET)
    # Open bodies sealed before message ids were bound (zqe1): on for upgrades,
    # off once none is left, so none can be copied onto a newer message.
    open_legacy_bodies: bool = True

    def check(self) -> None:
        """ConfigError for any unusable setting."""
        keys = self.parsed_keys()
        if not keys:
            if self.active_key or self.fingerprint_key:
                raise ConfigError(
                    "encryption.active_key and encryption.fingerprint_key need "
                    "encryption.keys."
                )
            return
        self.active_key_id()
        self.fingerprint_key_bytes()

    def parsed_keys(self) -> dict[str, bytes]:
        """The keys by id; ConfigError for a malformed entry or a key of the wrong length."""
        keys: dict[str, bytes] = {}
        for entry in (part.strip() for part in self.keys.split(",")):
            if not entry:
                continue
            key_id, sep, encoded = entry.partition(":")
            if not sep or not _KEY_ID.match(key_id):
                raise ConfigError(
                    "encryption.keys: expected \"id:BASE64KEY,...\" with ids of 1 to 64 "
                    f"letters, digits, '_', '.' or '-'; got an entry starting {entry[:12]!r}."
                )
            if key_id in keys:
                raise ConfigError(f"encryption.keys: key id {key_id!r} appears twice.")
            key = _base64(encoded, f"encryption.keys: key {key_id!r}")
            if len(key) != ENCRYPTION_KEY_BYTES:
                raise ConfigError(
                    f"encryption.keys: key {key_id!r} is {len(key)} bytes; AES-256 needs "
                    f"{ENCRYPTION_KEY_BYTES} (generate one with: openssl rand -base64 32)."
                )
            keys[key_id] = key
        return keys

    def active_key_id(self) -> str:
        """The id of the key that encrypts new messages."""
        keys = self.parsed_keys()
        if self.active_key:
            if self.active_key not in keys:
                raise ConfigError(
                    f"encryption.active_key {self.active_key!r} is not one of "
                    f"encryption.keys ({', '.join(sorted(keys))})."
                )
            return self.active_key
        if len(keys) != 1:
            raise ConfigError(
                "encryption.active_key must name the key new messages use when "
                f"encryption.keys holds several ({', '.join(sorted(keys))})."
            )
        return next(iter(keys))

    def fingerprint_key_bytes(self) -> bytes:
        """The HMAC key of encrypted bodies' fingerprints."""
        if not self.fingerprint_key:
            raise ConfigError(
                "encryption.fingerprint_key is required with encryption.keys: it keys the "
                "fingerprints of encrypted bodies (generate one with: openssl rand -base64 32)."
            )
        key = _base64(self.fingerprint_key, "encryption.fingerprint_key")
        if len(key) < MIN_FINGERPRINT_KEY_BYTES:
            raise ConfigError(
                f"encryption.fingerprint_key is {len(key)} bytes; at least "
                f"{MIN_FINGERPRINT_KEY_BYTES} are needed."
            )
        return key


def _base64(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"{where} is not valid base64.") from exc


@dataclass(frozen=True)
class MetricsConfig:
    """``GET /metrics`` (Prometheus); see docs/metrics.md."""

    enabled: bool = True
    per_project: bool = False  # a project label on every series (cardinality!)
    cache_seconds: float = 10.0  # how long a worker reuses the per-queue gauges it computed
    budget_seconds: float = 2.0  # time one scrape may spend on per-queue gauges or the event tail
    max_queues: int = 500  # per-queue gauges for at most this many queues (most recently active)

    def __post_init__(self) -> None:
        if self.budget_seconds <= 0:
            # With no time to spend, a scrape would never count an event.
            raise ConfigError("metrics.budget_seconds: must be positive, got "
                              f"{self.budget_seconds!r}.")


@dataclass(frozen=True)
class NotificationsConfig:
    """The notifier of subscriptions (zq.notifications); see docs/notifications.md."""

    enabled: bool = True  # run the notifier process inside ``zq serve``
    # Comma separated HOST[:PORT] entries (a name, an IP or a CIDR; IPv6 in
    # brackets when a port follows). Empty: no webhook is sent at all.
    # Private, loopback and link-local addresses need an IP or CIDR entry.
    allowed_hosts: str = ""
    poll_interval: float = 0.5  # seconds between looks at the event log when idle
    timeout: float = 10.0  # seconds for one webhook or mail attempt
    concurrency: int = 8  # attempts in flight at once (threads of the notifier process)
    queue_depth: int = 100  # events one subscription reads into memory at a time
    lease_seconds: float = 30.0  # how long a subscription stays with one server without news
    # On logs whose order is not final at write time (MariaDB, MongoDB
    # without transactions): events younger than this wait (zq.analytics.export).
    settle_seconds: float = 5.0
    max_redirects: int = 3  # redirects followed, each to an allowed host only
    # Zaqar's require_confirmation: an unconfirmed subscriber gets nothing,
    # and is sent a confirmation request (zq.subscriptions).
    require_confirmation: bool = False
    smtp_host: str = ""  # mailto: subscribers; empty: mail is not sent (reported)
    smtp_port: int = 25
    smtp_from: str = "zq@localhost"
    # Where subscribers reach this API (https://host:port): confirmation
    # requests then carry Zaqar's WSGISubscribeURL; empty: only the path.
    public_url: str = ""

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.queue_depth < 1:
            raise ConfigError("notifications.concurrency and queue_depth must be at least 1.")
        if self.timeout <= 0 or self.lease_seconds <= 0 or self.poll_interval <= 0:
            raise ConfigError("notifications.timeout, lease_seconds and poll_interval must "
                              "be positive.")
        # Read here, not first in the notifier process: a bad entry must stop
        # ``zq serve`` (and ``zq config``) in one line, not kill the notifier.
        try:
            parse_entries(self.allowed_hosts)
        except ValueError as exc:
            raise ConfigError(f"notifications.{exc}") from None


@dataclass(frozen=True)
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    redis: RedisConfig = field(default_factory=RedisConfig)
    sql: SqlConfig = field(default_factory=SqlConfig)
    limits: Limits = field(default_factory=Limits)
    gc: GcConfig = field(default_factory=GcConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    signed_urls: SignedUrlsConfig = field(default_factory=SignedUrlsConfig)
    log: LogConfig = field(default_factory=LogConfig)
    pooling: PoolingConfig = field(default_factory=PoolingConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    encryption: EncryptionConfig = field(default_factory=EncryptionConfig)
    notifications: NotificationsConfig = field(default_factory=NotificationsConfig)

    def with_overrides(self, **sections: Mapping[str, Any]) -> Config:
        """A copy with some fields replaced: ``with_overrides(server={"port": 1})``."""
        return _merge(self, {k: dict(v) for k, v in sections.items()}, source="overrides")


def load_config(path: str | os.PathLike[str] | None = None,
                environ: Mapping[str, str] | None = None) -> Config:
    """Build the configuration from defaults, file and environment."""
    environ = os.environ if environ is None else environ
    path = path or environ.get("ZQ_CONFIG")
    config = Config()
    if path:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError as exc:
            raise ConfigError(f"Configuration file {path} does not exist.") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"Configuration file {path} is not valid TOML: {exc}") from exc
        config = _merge(config, data, source=str(path))
    config = _merge(config, _from_environ(config, environ), source="environment")
    config.encryption.check()
    return config


# ZQ_* variables that are not settings: the file, the storage URI's short
# name, and the test suite's own (ZQ_TEST_*, ZQ_FUZZ_*), which zq never reads.
OTHER_VARIABLES = ("ZQ_CONFIG", "ZQ_STORAGE")
TEST_PREFIXES = ("ZQ_TEST_", "ZQ_FUZZ_")


def _setting_variables(config: Config) -> dict[str, tuple[str, str]]:
    """``ZQ_SECTION_NAME`` -> (section, name) for every setting."""
    return {
        f"ZQ_{section.name}_{item.name}".upper(): (section.name, item.name)
        for section in dataclasses.fields(config)
        for item in dataclasses.fields(getattr(config, section.name))
    }


def setting_variables() -> list[str]:
    """Every environment variable zq reads."""
    return [*OTHER_VARIABLES, *_setting_variables(Config())]


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per ``ZQ_*`` variable that names no setting, with the closest one.

    A misspelled variable would otherwise be ignored without a word, and the
    operator would believe the setting took effect.
    """
    environ = os.environ if environ is None else environ
    known = setting_variables()
    warnings = []
    for name in sorted(environ):
        if not name.startswith("ZQ_") or name in known or name.startswith(TEST_PREFIXES):
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; `zq config --help` lists them."
        warnings.append(f"{name} is not a zq setting and is ignored{hint}")
    return warnings


def _from_environ(config: Config, environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    if "ZQ_STORAGE" in environ:
        found.setdefault("storage", {})["uri"] = environ["ZQ_STORAGE"]
    for variable, (section, name) in _setting_variables(config).items():
        if variable in environ:
            found.setdefault(section, {})[name] = environ[variable]
    return found


def _merge(config: Config, data: Mapping[str, Any], *, source: str) -> Config:
    sections: dict[str, Any] = {}
    known = {f.name for f in dataclasses.fields(config)}
    for name, values in data.items():
        if name not in known:
            raise ConfigError(f"{source}: unknown section [{name}]; known: {sorted(known)}.")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{source}: [{name}] must be a table of settings.")
        current = getattr(config, name)
        types = {f.name: f.type for f in dataclasses.fields(current)}
        changes = {}
        for key, value in values.items():
            if key not in types:
                raise ConfigError(
                    f"{source}: unknown setting {name}.{key}; known: {sorted(types)}."
                )
            changes[key] = _coerce(value, types[key], f"{source}: {name}.{key}")
        sections[name] = dataclasses.replace(current, **changes)
    return dataclasses.replace(config, **sections)


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _coerce_bool(value: Any, where: str) -> bool:
    """A TOML boolean, or its spelling in an environment variable."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{where}: expected true or false, got {value!r}.")


def _choice(value: str, choices: tuple[str, ...], where: str) -> None:
    if value not in choices:
        raise ConfigError(f"{where}: expected one of {', '.join(choices)}, got {value!r}.")


def _coerce(value: Any, type_name: Any, where: str) -> Any:
    # Field types are strings under ``from __future__ import annotations``.
    if str(type_name) == "bool":
        return _coerce_bool(value, where)
    kind = {"int": int, "float": float, "str": str}.get(str(type_name))
    if kind is None:
        raise ConfigError(f"{where}: unsupported setting type {type_name}.")
    if isinstance(value, bool) or (kind is str and not isinstance(value, str)):
        raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}.")
    try:
        result = kind(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}.") from exc
    if kind in (int, float) and result < 0:
        raise ConfigError(f"{where}: must not be negative, got {value!r}.")
    return result
