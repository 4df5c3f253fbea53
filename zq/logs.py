"""Logs: one JSON object (key=value, or a line for people) per record, with the request id.

The request id middleware stores the id in ``REQUEST_ID`` (a context
variable, so each thread or task sees its own), and ``RequestIdFilter``
copies it onto every record logged while the request is handled, by zq or
by a library. Records never include request bodies or headers: the access
line names method, path, status, duration and project only.
"""

from __future__ import annotations

import contextvars
import datetime
import logging
import sys
from typing import Any, TextIO

import orjson

from zq.config import LogConfig

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "zq_request_id", default=None
)

# Attributes every LogRecord has; anything else was passed with ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "request_id",
}


class RequestIdFilter(logging.Filter):
    """Give every record a ``request_id`` attribute (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
            timespec="milliseconds"
        ),
        "level": record.levelname,
        "logger": record.name,
        "request_id": getattr(record, "request_id", None),
        "message": record.getMessage(),
    }
    fields.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
    if record.exc_info:
        fields["exception"] = logging.Formatter().formatException(record.exc_info)
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        return orjson.dumps(_fields(record), default=str).decode()


class KeyValueFormatter(logging.Formatter):
    """``key=value`` pairs, values quoted when they hold spaces or quotes."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_kv(v)}" for k, v in _fields(record).items())


class ConsoleFormatter(logging.Formatter):
    """For a person at a terminal: local time, level, message, then the other fields."""

    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record)
        when = datetime.datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        head = f"{when} {fields.pop('level'):<7} {fields.pop('message')}"
        fields.pop("time")
        exception = fields.pop("exception", None)
        extra = " ".join(f"{k}={_kv(v)}" for k, v in fields.items()
                         if v is not None and k != "logger")
        line = f"{head}  [{extra}]" if extra else head
        return f"{line}\n{exception}" if exception else line


FORMATTERS: dict[str, type[logging.Formatter]] = {
    "json": JsonFormatter, "text": KeyValueFormatter, "console": ConsoleFormatter,
}


def _kv(value: Any) -> str:
    text = "-" if value is None else str(value)
    if not text or any(c in text for c in ' "=\n'):
        return orjson.dumps(text).decode()
    return text


def resolved_format(name: str, stream: TextIO) -> str:
    """The format ``auto`` stands for on ``stream``; any other name as is."""
    if name != "auto":
        return name
    isatty = getattr(stream, "isatty", None)
    return "console" if isatty is not None and isatty() else "json"


def configure(config: LogConfig, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record to ``stream`` (stderr) in the configured format.

    ``auto`` picks ``console`` when the stream is a terminal (a person runs
    ``zq serve``) and ``json`` otherwise (systemd, a container, a file).
    """
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(FORMATTERS[resolved_format(config.format, stream)]())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # ``log.level`` is zq's own verbosity; libraries (alembic, granian,
    # urllib3, ...) only speak up for warnings, or their INFO chatter would
    # bury zq's lines.
    root.setLevel(logging.WARNING)
    logging.getLogger("zq").setLevel(config.level.upper())
    return handler
