"""Settings, 12-factor: every deployment knob is an environment variable read through django-environ.

With nothing set, the server runs on an embedded SQLite file and the built-in offline model.
A bad value fails loudly at start-up rather than at the first request.
"""
from datetime import timedelta
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
# Run from a checkout, the page's folders (templates/, static/) and var/ sit beside manage.py. Run from
# an install (`pip install .`, the image), the page's folders are inside this package (setup.py puts
# them there), and var/ and .env are the working directory's.
INSTALLED = (Path(__file__).resolve().parent / "templates").is_dir()
PAGE_DIR = Path(__file__).resolve().parent if INSTALLED else BASE_DIR
WORK_DIR = Path.cwd() if INSTALLED else BASE_DIR

env = environ.Env()
environ.Env.read_env(WORK_DIR / ".env") if (WORK_DIR / ".env").exists() else None

DEBUG = env.bool("DEBUG", default=False)
# Keys everyone can read in this repository. Served with one, anyone could sign sessions and CSRF tokens;
# so with DEBUG off the server refuses to start (bin/serve generates a key of its own in var/).
PUBLIC_SECRET_KEYS = ("dev-only-insecure-key-change-me", "change-me-in-production", "")
# As Django's own deployment check (security.W009) asks: at least 50 characters, at least 5 different
# ones, and not a key `startproject` made for development. " " and "abc" were accepted before.
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY = env.str("SECRET_KEY", default=PUBLIC_SECRET_KEYS[0])
if not DEBUG and (SECRET_KEY.strip() in PUBLIC_SECRET_KEYS or len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH
                  or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure")):
    raise environ.ImproperlyConfigured(
        f"SECRET_KEY is unset, a public development value, or too weak: with DEBUG off it must be a random "
        f"secret of at least {SECRET_KEY_MIN_LENGTH} characters (at least 5 different ones) that is not one of "
        "the repository's public values (for instance the output of `python3 -c 'import secrets; "
        "print(secrets.token_urlsafe(50))'`; bin/serve keeps one in var/secret_key), or DEBUG=true on a "
        "development machine.")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
CSRF_FAILURE_VIEW = "tambo_project.views.csrf_failure"  # the route's error shape, not Django's page
# Origins whose browser apps may call /v1 and /api with an API key ("*": any; never with cookies).
CORS_ALLOWED_ORIGINS = env.list("CORS_ALLOWED_ORIGINS", default=["*"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "projects",
    "threads",
    "runs",
    "tools",
    "telemetry",
    "memory",
    "retention",  # no models: the retention job, forgetting a user, their commands
    "gateway",  # no models: its AppConfig registers the gateway's error shape (core/error_shapes.py)
    "axes",  # login throttling (below)
    "tambo_project.apps.ConfigurationConfig",  # no models: its system checks (tambo_project/checks.py)
]

MIDDLEWARE = [
    "telemetry.middleware.TelemetryMiddleware",  # outermost: every answer is counted and logged
    "tambo_project.cors.CorsMiddleware",
    "tambo_project.middleware.InputSanityMiddleware",
    # Django's own middleware, run on the event loop for async requests (no thread hop per step).
    "tambo_project.inline_middleware.SecurityMiddleware",
    "tambo_project.inline_middleware.SessionMiddleware",
    "tambo_project.inline_middleware.CommonMiddleware",
    "tambo_project.inline_middleware.CsrfViewMiddleware",
    "tambo_project.inline_middleware.AuthenticationMiddleware",
    "tambo_project.inline_middleware.MessageMiddleware",
    "tambo_project.inline_middleware.XFrameOptionsMiddleware",
    "tambo_project.middleware.ProblemMiddleware",
    "runs.recovery.middleware.RunWatcherMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: answers a locked-out login 429
]

# Login throttling for the page's login and the Django admin's (django-axes): after LOGIN_FAILURE_LIMIT
# wrong passwords for one account, or from one address, that account or address is locked out for
# LOGIN_LOCKOUT_SECONDS, counted in the database so every process sees them; a right password before
# then resets the count. Before, 100 wrong passwords in 37 s were all tried, then the right one worked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(seconds=env.int("LOGIN_LOCKOUT_SECONDS", default=900))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks: per account and per address
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Django's deploy checks security.W001-W003 look for its own class paths, not for the subclasses above;
# tambo_project/checks.py makes the same demands of the classes (tambo.W001-W003) instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

ROOT_URLCONF = "tambo_project.urls"
ASGI_APPLICATION = "tambo_project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [PAGE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

SQLITE_PATH = env.str("SQLITE_PATH", default=str(WORK_DIR / "var" / "db.sqlite3"))
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{SQLITE_PATH}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # IMMEDIATE transactions take SQLite's write lock at BEGIN, which is what makes the run lock's
    # read-check-write atomic there (SQLite has no SELECT ... FOR UPDATE). WAL lets readers go on.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # Tests share the database with a server subprocess, so the test database is a file too.
    DATABASES["default"]["TEST"] = {"NAME": SQLITE_PATH + "-test"}
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
# The run path's database work runs on DB_THREADS shared worker threads (core/db.py), and on
# PostgreSQL every connection comes from a pool of at most DB_POOL_SIZE (0: no pool, e.g. behind
# PgBouncer; each worker then keeps one connection). A request that finds no free connection within
# DB_POOL_TIMEOUT seconds answers 503 with Retry-After: DB_RETRY_AFTER.
DB_THREADS = env.int("DB_THREADS", default=4)
DB_POOL_SIZE = env.int("DB_POOL_SIZE", default=10)
DB_POOL_TIMEOUT = env.float("DB_POOL_TIMEOUT", default=5.0)
DB_RETRY_AFTER = env.int("DB_RETRY_AFTER", default=2)
DB_POOL_CHECK_IDLE = env.float("DB_POOL_CHECK_IDLE", default=10.0)
if DB_THREADS < 1 or DB_POOL_SIZE < 0:
    raise environ.ImproperlyConfigured("DB_THREADS must be at least 1 and DB_POOL_SIZE at least 0")


def _watched_connection():
    from core.db_health import WatchedConnection

    return WatchedConnection


if DATABASES["default"]["ENGINE"].startswith("django.db.backends.postgresql") and DB_POOL_SIZE:
    if DATABASES["default"]["CONN_MAX_AGE"]:
        raise environ.ImproperlyConfigured("CONN_MAX_AGE must be 0 with the connection pool (DB_POOL_SIZE=0 turns it off)")
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_SIZE), "max_size": DB_POOL_SIZE, "timeout": DB_POOL_TIMEOUT,
        # The pool's background reconnects back off exponentially (1, 2, 4, 8 … s) while the database
        # is away, so one could be seconds away after it is back. Giving up after 2 s instead lets
        # the next request that finds no connection start a fresh attempt at once.
        "reconnect_timeout": 2.0,
        # Its failed connection attempts mark the database down at once (core/db_health.py).
        "connection_class": _watched_connection()}
    # After a database restart every idle pooled connection is dead; with health checks the pool checks
    # one as it hands it out and replaces it there, instead of failing the request, the watcher tick or
    # a run's settling. Django's backend with the pool's check of our own (core/pool_check.py): a round
    # trip only for a connection the server spoke on while it was idle, one idle for more than
    # DB_POOL_CHECK_IDLE seconds, or one handed out before a connection failed; not on every call.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"]["ENGINE"] = "core.pg_backend"
# The one LISTEN connection per process that wakes readers of runs streaming in other processes
# (runs/stream/follow.py). It must reach PostgreSQL itself: a transaction-pooling proxy cannot hold a LISTEN.
DATABASE_LISTEN_URL = env.str("DATABASE_LISTEN_URL", default=env.str("DATABASE_URL", default=""))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [PAGE_DIR / "static"]
STATIC_ROOT = env.str("STATIC_ROOT", default=str(WORK_DIR / "var" / "static"))
# WhiteNoise serves /static/ (tambo_project/static_files.py). STATIC_COLLECTED (`tambo-server serve`
# sets it once it has run collectstatic) serves STATIC_ROOT's copies: compressed, with a content hash in
# their names, so browsers keep them for a year. Otherwise (bin/serve, the tests) the source folders
# are served as they are, looked up on every request so that an edited file is served at once.
STATIC_COLLECTED = env.bool("STATIC_COLLECTED", default=False)
if STATIC_COLLECTED:
    STORAGES = {"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                "staticfiles": {"BACKEND": "tambo_project.static_files.CollectedStaticStorage"}}
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = not STATIC_COLLECTED
# Served over HTTPS (a proxy terminating TLS, docs/deployment.md): cookies only over HTTPS, and HSTS.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
LOGIN_URL = "/login/"

CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["projects.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.input_guard.JSONParser"],
    "EXCEPTION_HANDLER": "core.error_shapes.drf_exception_handler",  # the middleware's answer too
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tambo v1 API (self-hosted)",
    "DESCRIPTION": "Threads, messages and streaming runs. Run endpoints answer text/event-stream (AG-UI events).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # 3.1: the pydantic wire models' JSON Schema (const, anyOf with null) is valid there, not in 3.0.
    "OAS_VERSION": "3.1.0",
    # Path parameters as the spec names them: {threadId}, not {thread_id}.
    "CAMELIZE_NAMES": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # The async SSE run endpoints (not DRF views), the Problem schema and the error answers.
        "tambo_project.openapi.postprocess_v1_schema",
    ],
}

# --- Limits -------------------------------------------------------------------------------------
MAX_REQUEST_BYTES = env.int("MAX_REQUEST_BYTES", default=1_000_000)
# A connection must send a request's whole head within this many seconds (tambo_project/http_guard.py),
# and the request its whole body within REQUEST_BODY_TIMEOUT (tambo_project/asgi_limits.py): a client
# that sends half a request holds a connection no longer.
REQUEST_HEADER_TIMEOUT = env.float("REQUEST_HEADER_TIMEOUT", default=10.0)
REQUEST_BODY_TIMEOUT = env.float("REQUEST_BODY_TIMEOUT", default=30.0)
# Image URLs in messages must not point at loopback, link-local, private or metadata addresses
# (core/public_urls.py), except these hosts, addresses or CIDR networks the operator allows.
MEDIA_URL_ALLOWED_HOSTS = env.list("MEDIA_URL_ALLOWED_HOSTS", default=[])
# The most characters of one server or MCP tool result stored and sent to the model (runs/toolbox.py);
# a project's `toolResultMaxChars` overrides it.
TOOL_RESULT_MAX_CHARS = env.int("TOOL_RESULT_MAX_CHARS", default=100_000)
# Memory (docs/memory.md): the most tokens of a user's memories in a run's system prompt (a quarter of
# the project's context budget at most), and the memory extractions one process makes at a time.
MEMORY_PROMPT_TOKENS = env.int("MEMORY_PROMPT_TOKENS", default=1000)
MEMORY_EXTRACTIONS = env.int("MEMORY_EXTRACTIONS", default=2)
if MEMORY_PROMPT_TOKENS < 1 or MEMORY_EXTRACTIONS < 1:
    raise environ.ImproperlyConfigured("MEMORY_PROMPT_TOKENS and MEMORY_EXTRACTIONS must be at least 1")
# A request's head (request line and headers) longer than this is answered 431 (tambo_project/http_guard.py).
MAX_REQUEST_HEAD_BYTES = env.int("MAX_REQUEST_HEAD_BYTES", default=64 * 1024)
# When the last open stream ends, give freed memory back to the system (core/memory.py).
MEMORY_TRIM = env.bool("MEMORY_TRIM", default=True)
# Run bodies carry the user's images and files (docs/images-and-voice.md); audio uploads are larger still.
MAX_RUN_BYTES = env.int("MAX_RUN_BYTES", default=10_000_000)
MAX_AUDIO_BYTES = env.int("MAX_AUDIO_BYTES", default=25 * 1024 * 1024)
TRANSCRIPTION_TIMEOUT = env.float("TRANSCRIPTION_TIMEOUT", default=60.0)
# A page of messages stops before its content passes this many bytes (always at least one message).
MESSAGE_PAGE_BYTES = env.int("MESSAGE_PAGE_BYTES", default=8_000_000)
# The one body limit is MAX_REQUEST_BYTES at the ASGI edge (tambo_project/asgi_limits.py), which also
# counts chunked bodies; Django's own check sees only Content-Length and would answer in its own shape.
DATA_UPLOAD_MAX_MEMORY_SIZE = None
# The same in every process: a lease not renewed for a third of it is taken over (docs/operations.md#takeover).
RUN_LEASE_SECONDS = env.float("RUN_LEASE_SECONDS", default=30.0)
# Takeover (docs/operations.md#takeover): a run is taken over at most this many times (0: never; its
# process dying or shutting down then fails it, RUN_LEASE_EXPIRED / SERVER_SHUTTING_DOWN) ...
RUN_TAKEOVER_LIMIT = env.int("RUN_TAKEOVER_LIMIT", default=3)
# ... and one process starts at most this many takeovers at once (the N of docs/operations.md#takeover).
RUN_TAKEOVERS_PER_PROCESS = env.int("RUN_TAKEOVERS_PER_PROCESS", default=100)
# How often one process renews the leases and looks for cancels of all the runs it streams.
RUN_WATCH_INTERVAL = env.float("RUN_WATCH_INTERVAL", default=0.5)
# A DELETE of a run answers once the run's end is stored, waiting at most this long for it (then 202).
RUN_CANCEL_WAIT_SECONDS = env.float("RUN_CANCEL_WAIT_SECONDS", default=10.0)
# Usage counters (token budgets' days, projects/limits.py) older than this are pruned by the watcher.
USAGE_RETENTION_DAYS = env.int("USAGE_RETENTION_DAYS", default=90)
if USAGE_RETENTION_DAYS < 1:
    raise environ.ImproperlyConfigured("USAGE_RETENTION_DAYS must be at least 1")
# Each serving process runs a pass of the projects' retention (retention/jobs.py) this often; 0: never
# (run `manage.py apply_retention` from cron instead).
RETENTION_INTERVAL_SECONDS = env.float("RETENTION_INTERVAL_SECONDS", default=3600.0)
# Resumable runs (docs/protocol.md#resumable-runs): a run's events can be replayed this long after it ended.
RUN_REPLAY_SECONDS = env.float("RUN_REPLAY_SECONDS", default=300.0)
# A process writes the new events of all the runs it streams to the event log in one statement at
# most this often (readers on other processes wait that long at most for them).
RUN_EVENTS_FLUSH_INTERVAL = env.float("RUN_EVENTS_FLUSH_INTERVAL", default=0.01)
# The bytes of events a run keeps in memory for its readers (beyond those not yet in the event log);
# a reader that falls further behind is cut with a `tambo.stream.lagged` event it can resume from.
RUN_EVENTS_BUFFER_BYTES = env.int("RUN_EVENTS_BUFFER_BYTES", default=1_000_000)
# The bytes of a run's events kept while the event log takes none (the database is away); past it
# the oldest are given up, counted and logged (runs/stream/feeds.py), so an outage cannot exhaust memory.
RUN_EVENTS_UNLOGGED_BYTES = env.int("RUN_EVENTS_UNLOGGED_BYTES", default=4_000_000)
MAX_TOOL_CALLS_PER_TURN = env.int("MAX_TOOL_CALLS_PER_TURN", default=100)
# The most model calls (steps) one run makes; a project's `limits.modelCallsPerRun` may lower it.
MAX_MODEL_CALLS_PER_RUN = env.int("MAX_MODEL_CALLS_PER_RUN", default=50)
# The safe defaults of a project nobody configured (docs/abuse-and-limits.md#safe-defaults); a project's
# own `runsPerMinute`, `maxOutputTokens` and `maxInputTokens` override each, and 0 here turns one off.
# Runs per minute of one project (all its keys and users together: what bounds a copied key).
DEFAULT_RUNS_PER_MINUTE = env.int("DEFAULT_RUNS_PER_MINUTE", default=60)
# The most output tokens one model call may ask for (a larger `max_tokens` is lowered to it).
DEFAULT_MAX_OUTPUT_TOKENS = env.int("DEFAULT_MAX_OUTPUT_TOKENS", default=4096)
# The most input tokens one model call may send: a thread's oldest turns are left out past it.
DEFAULT_MAX_INPUT_TOKENS = env.int("DEFAULT_MAX_INPUT_TOKENS", default=32000)
if min(DEFAULT_RUNS_PER_MINUTE, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_MAX_INPUT_TOKENS) < 0:
    raise environ.ImproperlyConfigured("DEFAULT_RUNS_PER_MINUTE, DEFAULT_MAX_OUTPUT_TOKENS and "
                                       "DEFAULT_MAX_INPUT_TOKENS must be 0 (off) or more")
if DEFAULT_MAX_INPUT_TOKENS and DEFAULT_MAX_OUTPUT_TOKENS >= DEFAULT_MAX_INPUT_TOKENS:
    raise environ.ImproperlyConfigured("DEFAULT_MAX_OUTPUT_TOKENS must be below DEFAULT_MAX_INPUT_TOKENS "
                                       "(the output budget comes out of the input's)")
# A run's output reserved against the token budgets at its admission when neither it nor its project
# caps its output (docs/abuse-and-limits.md).
BUDGET_RESERVED_OUTPUT_TOKENS = env.int("BUDGET_RESERVED_OUTPUT_TOKENS", default=1000)
MAX_IDENTICAL_TOOL_CALLS = env.int("MAX_IDENTICAL_TOOL_CALLS", default=3)
# POST /v1/agui: the most messages one RunAgentInput may carry (the whole history is sent each time).
AGUI_MAX_MESSAGES = env.int("AGUI_MAX_MESSAGES", default=500)
SERVER_TOOL_TIMEOUT = env.float("SERVER_TOOL_TIMEOUT", default=30.0)
# Threads for synchronous server tools; one that times out holds its thread until it returns.
SERVER_TOOL_THREADS = env.int("SERVER_TOOL_THREADS", default=8)
if SERVER_TOOL_THREADS < 1:
    raise environ.ImproperlyConfigured("SERVER_TOOL_THREADS must be at least 1")
MCP_TIMEOUT = env.float("MCP_TIMEOUT", default=30.0)
MCP_TOOLS_CACHE_SECONDS = env.float("MCP_TOOLS_CACHE_SECONDS", default=30.0)
# An MCP server's session (a stdio server's process) is kept this long after its last call.
MCP_SESSION_IDLE_SECONDS = env.float("MCP_SESSION_IDLE_SECONDS", default=300.0)
# After a failed tool listing runs leave the server out at once; it is listed again in the background
# this long after the failure, doubling per failure in a row up to 60 times as long.
MCP_RETRY_SECONDS = env.float("MCP_RETRY_SECONDS", default=5.0)
# Protected MCP servers (docs/tools.md#protected-mcp-servers): this server's OAuth callback as the
# authorization servers see it (the redirect URI registered with them), an optional client ID metadata
# document URL (HTTPS, preferred over dynamic registration where offered), and how long a started
# authorisation may wait for its callback.
MCP_OAUTH_REDIRECT_URL = env.str("MCP_OAUTH_REDIRECT_URL", default="http://localhost:8000/mcp/oauth/callback")
MCP_OAUTH_CLIENT_METADATA_URL = env.str("MCP_OAUTH_CLIENT_METADATA_URL", default="") or None
MCP_OAUTH_FLOW_SECONDS = env.float("MCP_OAUTH_FLOW_SECONDS", default=900.0)
# While a run waits on the model or a tool, its stream carries an SSE comment this often.
HEARTBEAT_SECONDS = env.float("HEARTBEAT_SECONDS", default=15.0)

# --- Model providers ------------------------------------------------------------------------------
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="") or None
OPENAI_MODEL = env.str("OPENAI_MODEL", default="gpt-4o-mini")
OPENAI_TIMEOUT = env.float("OPENAI_TIMEOUT", default=60.0)
# OPENAI_TIMEOUT is per read, which a vendor sending a byte now and then resets forever; these bound a
# vendor call in total (providers/deadline.py): a non-streamed call whole, and a streamed step's first
# delta; the longest gap between a streamed step's deltas; a streamed step whole (0: no limit).
MODEL_CALL_DEADLINE = env.float("MODEL_CALL_DEADLINE", default=120.0)
MODEL_IDLE_SECONDS = env.float("MODEL_IDLE_SECONDS", default=60.0)
MODEL_STREAM_DEADLINE = env.float("MODEL_STREAM_DEADLINE", default=1800.0)
# The native Anthropic provider's server-wide default (docs/models.md); projects name their own.
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="") or None
ANTHROPIC_MODEL = env.str("ANTHROPIC_MODEL", default="claude-sonnet-4-5")
# The model names a project without its own `models` or `allowedModels` may ask for, beside the server's
# own model (OPENAI_MODEL, ANTHROPIC_MODEL or `offline`, by MODEL_PROVIDER), served by its endpoint;
# `*` allows any name (projects/models_config.py).
ALLOWED_MODELS = env.list("ALLOWED_MODELS", default=[])
# Parameters sent with every model call unless the project or the run sets them (JSON object).
MODEL_PARAMETERS = env.json("MODEL_PARAMETERS", default={})
if not isinstance(MODEL_PARAMETERS, dict):
    raise environ.ImproperlyConfigured("MODEL_PARAMETERS must be a JSON object")
# Fernet keys encrypting the secrets stored in project settings (projects/secrets.py): comma-separated,
# the first encrypts, all decrypt (rotation: a new key first, then `manage.py rotate_secrets`).
SECRETS_KEYS = env.list("SECRETS_KEYS", default=[])
# The admin's search by words decrypts at most this many of the most recent encrypted messages of the
# list it searches (threads/search.py, docs/projects.md#content-encrypted-at-rest).
ADMIN_SEARCH_ENCRYPTED_MESSAGES = env.int("ADMIN_SEARCH_ENCRYPTED_MESSAGES", default=2000)
if ADMIN_SEARCH_ENCRYPTED_MESSAGES < 0:
    raise environ.ImproperlyConfigured("ADMIN_SEARCH_ENCRYPTED_MESSAGES must be 0 or more")
# "openai" when a key or base URL is configured, else the built-in offline model.
MODEL_PROVIDER = env.str(
    "MODEL_PROVIDER", default="openai" if (OPENAI_API_KEY or OPENAI_BASE_URL) else "offline"
)
if MODEL_PROVIDER not in ("openai", "anthropic", "offline"):
    raise environ.ImproperlyConfigured(
        f"MODEL_PROVIDER must be 'openai', 'anthropic' or 'offline', not {MODEL_PROVIDER!r}")
# Seconds between the offline model's deltas (0 for benchmarks).
OFFLINE_MODEL_DELAY = env.float("OFFLINE_MODEL_DELAY", default=0.02)

# Chat-completions gateway (gateway): alias -> "provider:model", as `gpt-4o=openai:gpt-4o,local=openai:llama3.1:8b`
# (colons in the model are fine) or, for names holding `,` or `=`, a JSON object. `offline` is always allowed.
GATEWAY_MODELS = (env.json("GATEWAY_MODELS") if env.str("GATEWAY_MODELS", default="").lstrip().startswith("{")
                  else env.dict("GATEWAY_MODELS", default={}))
# Unset: the server's default model (MODEL_PROVIDER's), or `offline` when none is configured.
GATEWAY_DEFAULT_MODEL = env.str("GATEWAY_DEFAULT_MODEL", default="")
# Requests per minute per API key (or browser session); 0 turns the limit off.
GATEWAY_RATE_LIMIT_PER_MINUTE = env.int("GATEWAY_RATE_LIMIT_PER_MINUTE", default=60)
for _alias, _target in GATEWAY_MODELS.items():
    if not isinstance(_target, str) or _target.partition(":")[0].strip() not in ("openai", "anthropic", "offline"):
        raise environ.ImproperlyConfigured(
            f"GATEWAY_MODELS[{_alias!r}] must be 'openai:<model>', 'anthropic:<model>' or 'offline', not {_target!r}")
if GATEWAY_DEFAULT_MODEL and GATEWAY_DEFAULT_MODEL not in GATEWAY_MODELS and GATEWAY_DEFAULT_MODEL != "offline":
    raise environ.ImproperlyConfigured(
        f"GATEWAY_DEFAULT_MODEL {GATEWAY_DEFAULT_MODEL!r} is not 'offline' or an alias in GATEWAY_MODELS")

# --- Telemetry (telemetry/, docs/operations-telemetry.md) -----------------------------------------
LOG_FORMAT = env.str("LOG_FORMAT", default="plain")
if LOG_FORMAT not in ("plain", "json"):
    raise environ.ImproperlyConfigured(f"LOG_FORMAT must be 'plain' or 'json', not {LOG_FORMAT!r}")
ACCESS_LOG = env.bool("ACCESS_LOG", default=True)  # one line per request (logger tambo.access)
from telemetry.logs import logging_config  # noqa: E402  (a plain module: no app, no model)

LOGGING = logging_config(log_format=LOG_FORMAT, level=env.str("LOG_LEVEL", default="INFO"))
# GET /metrics answers only with this bearer token; METRICS_PORT serves it on a port of its own.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_PORT = env.int("METRICS_PORT", default=0)
METRICS_HOST = env.str("METRICS_HOST", default="127.0.0.1")

# Browser users without a project membership act in this project (created on first use).
WEB_PROJECT_NAME = env.str("WEB_PROJECT_NAME", default="demo")

# Identity by token (projects/user_tokens.py): a project's JWKS is re-fetched for an unknown `kid`
# at most once per cooldown, and a JWKS URL that does not answer within the timeout refuses the exchange.
USER_TOKEN_JWKS_COOLDOWN = env.float("USER_TOKEN_JWKS_COOLDOWN", default=60)
USER_TOKEN_JWKS_TIMEOUT = env.float("USER_TOKEN_JWKS_TIMEOUT", default=3)
# After a failed JWKS fetch, exchanges are refused at once for this long instead of fetching again.
USER_TOKEN_JWKS_RETRY_SECONDS = env.float("USER_TOKEN_JWKS_RETRY_SECONDS", default=5)
