"""The Prometheus series of docs/operations-telemetry.md, in prometheus-client's multiprocess mode.

With `PROMETHEUS_MULTIPROC_DIR` set (bin/serve sets it when WORKERS > 1), every process writes its
samples to memory-mapped files there and a scrape, served by any one process, sums the files of all
processes, including those of a worker that died and was replaced: its counts are not lost. Gauges
of processes that are gone are dropped (`livesum`, and `forget_dead_processes` at start-up).

Labels are bounded: a project's name, a model name, an outcome, a tool kind, a route template. Never a
user, a thread, a raw path or text. A client chooses the model string, so a model is a label only when
the operator named it (a model the project offers, the server's default, a gateway alias); any other
name is "other" and takes no slot (500 invented names filled the old 50 first-come slots, and later real
models showed as "other"). MAX_MODEL_LABELS still caps the named ones per process.
"""
from __future__ import annotations

import glob
import logging
import os
import re
from typing import Collection

from django.conf import settings
from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest,
                               multiprocess)

log = logging.getLogger(__name__)

MAX_MODEL_LABELS = 50
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)

RUNS = Counter("tambo_runs", "Runs ended, by how they ended.", ["project", "model", "outcome"])
RUN_DURATION = Histogram("tambo_run_duration_seconds", "From the run's start to its end.", ["project", "model"],
                         buckets=_LATENCY_BUCKETS)
TIME_TO_FIRST_TOKEN = Histogram("tambo_time_to_first_token_seconds",
                                "From the run's start to the model's first text or tool-call delta.",
                                ["project", "model"], buckets=_LATENCY_BUCKETS)
TOKENS = Counter("tambo_tokens", "Tokens the providers reported.", ["project", "model", "type"])
TOOL_CALLS = Counter("tambo_tool_calls", "Tool calls the model made.", ["project", "kind", "outcome"])
OPEN_STREAMS = Gauge("tambo_open_streams", "Runs streaming now.", multiprocess_mode="livesum")
HTTP_REQUESTS = Counter("tambo_http_requests", "Requests answered, by route template and status.",
                        ["route", "status"])
RATE_LIMITED = Counter("tambo_rate_limited", "Requests refused by a rate or budget limit.", ["project", "limit"])
DB_POOL_WAITING = Gauge("tambo_db_pool_waiting", "Requests waiting for a pooled connection.",
                        multiprocess_mode="livesum")
DB_POOL_IN_USE = Gauge("tambo_db_pool_in_use", "Pooled connections handed out.", multiprocess_mode="livesum")
MODEL_FALLBACKS = Counter("tambo_model_fallbacks", "Model calls that fell back to another model.",
                          ["project", "from", "to"])
MODEL_CALLS = Counter("tambo_model_calls", "Model calls made through the one door (telemetry/calls.py), by what "
                      "they were for and how they ended.", ["project", "kind", "outcome"])

_models_seen: set[str] = set()
_SAFE = re.compile(r"[^\w.:/@-]")


def model_label(model: str | None, offered: Collection[str] = ()) -> str:
    """A model name as a label: itself when the operator named it (`offered`: the project's model names,
    projects/models_config.py `project_model_names`; or the server's own), else "other"."""
    name = model or "default"
    if name not in offered and name not in _server_models():
        return "other"
    name = _SAFE.sub("_", name[:100])
    if name in _models_seen:
        return name
    if len(_models_seen) >= MAX_MODEL_LABELS:
        return "other"
    _models_seen.add(name)
    return name


def _server_models() -> set[str]:
    """The models the server's own settings name: its default per provider and the gateway's aliases."""
    names = {"default", "offline", settings.MODEL_PROVIDER, settings.OPENAI_MODEL, settings.ANTHROPIC_MODEL,
             settings.GATEWAY_DEFAULT_MODEL, *settings.GATEWAY_MODELS}
    names.update(target.split(":", 1)[-1] for target in settings.GATEWAY_MODELS.values())
    return names


def rate_limited(project, limit: str) -> None:
    """One request refused by `limit`: a project limit's setting name (projects/limits.py tells of
    those, registered in apps.py) or `gateway_requests_per_minute` (the gateway's per-key rate)."""
    RATE_LIMITED.labels(project.name, limit).inc()


def model_call(project, kind: str, outcome: str) -> None:
    """One model call ended: `kind` a usage kind (`run` for each step of a run, `gateway`, `name`,
    `suggestions`, `memory`, `transcription`), `outcome` `completed`, `failed` or `cancelled`."""
    MODEL_CALLS.labels(project.name, str(kind), str(outcome)).inc()


def fallbacks_taken(project_name: str, fallbacks, offered: Collection[str] = ()) -> None:
    """The switches of a ModelChain (`{"from", "to", "code"}` each), counted once the call ended."""
    for switch in fallbacks or ():
        MODEL_FALLBACKS.labels(project_name, _target_label(switch.get("from", ""), offered),
                               _target_label(switch.get("to", ""), offered)).inc()


def _target_label(target: str, offered: Collection[str]) -> str:
    """A `provider:model` label (providers/base.py ModelTarget.label): the provider comes from the
    configuration, the model is checked as model_label checks it."""
    provider, _, model = target.partition(":")
    return "other" if model_label(model, offered) == "other" else _SAFE.sub("_", target[:100])


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def exposition() -> tuple[bytes, str]:
    """The text format of every series, summed over the processes when in multiprocess mode."""
    sample_db_pool()
    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    from prometheus_client import REGISTRY

    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def sample_db_pool() -> None:
    """Copies this process's psycopg pool counters into the pool gauges (in memory, no statement)."""
    from django.db import connections

    connection = connections["default"]
    # The pool as it is, if this process made one: reading `connection.pool` would open one.
    pool = getattr(connection, "_connection_pools", {}).get(connection.alias)
    if pool is None:
        return
    stats = pool.get_stats()
    DB_POOL_WAITING.set(stats.get("requests_waiting", 0))
    DB_POOL_IN_USE.set(stats.get("pool_size", 0) - stats.get("pool_available", 0))


def forget_dead_processes() -> None:
    """Drops the live gauges of processes that no longer run (a replaced worker's open streams)."""
    directory = multiprocess_dir()
    if not directory:
        return
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        pid = int(path.rsplit("_", 1)[1].split(".")[0])
        if pid != os.getpid() and not _alive(pid):
            multiprocess.mark_process_dead(pid, directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve_metrics_port():
    """Serves /metrics on METRICS_PORT, from whichever process binds it first (any one can: the
    series are summed from the shared directory). The others find the port taken and go on.
    Returns the server (its `shutdown()` stops it), or None when this process serves none."""
    port = settings.METRICS_PORT
    if not port:
        return None
    from prometheus_client import start_http_server

    registry = None
    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    try:
        if registry is not None:
            server, _ = start_http_server(port, addr=settings.METRICS_HOST, registry=registry)
        else:
            server, _ = start_http_server(port, addr=settings.METRICS_HOST)
    except OSError:
        log.debug("METRICS_PORT %s is served by another process", port)
        return None
    return server
