"""Log formats: plain lines for people, one JSON object per line for machines (`LOG_FORMAT=json`).

The access line and the run's end line put their facts in `extra={"fields": {...}}`; both formats
print them. Nothing secret is ever put there: ids, names, counts and codes only, never a key, a
token, a query string or message text.
"""
from __future__ import annotations

import datetime as dt
import logging

import orjson


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(),
                 "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        entry.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class PlainFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = getattr(record, "fields", None)
        if fields:
            line += " " + " ".join(f"{key}={value}" for key, value in fields.items() if value is not None)
        return line


def logging_config(*, log_format: str, level: str) -> dict:
    """Django's LOGGING for `LOG_FORMAT` (plain or json) at `level`."""
    formatter = {"()": JsonFormatter} if log_format == "json" else {"()": PlainFormatter}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default"}},
        "root": {"handlers": ["console"], "level": level},
        # The `openai` client logs every request through httpx (or its fork httpx2) at INFO.
        "loggers": {"httpx": {"level": "WARNING"}, "httpx2": {"level": "WARNING"},
                    "django.request": {"level": "ERROR"},
                    # The access and run-end lines: INFO unless ACCESS_LOG turns the access line off.
                    "tambo.access": {"level": "INFO"}, "tambo.run": {"level": "INFO"}},
    }
