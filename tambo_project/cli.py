"""`tambo-server`, the installed command: every manage.py command, plus `serve` with production defaults.

    tambo-server migrate
    tambo-server createapikey --project NAME
    tambo-server serve [--host H] [--port P] [--workers N] [--migrate] [--no-collectstatic]

It works from any directory (the settings find the page's files inside the install) and reads its
configuration from the environment as the settings describe (docs/configuration.md). Unlike bin/serve,
the development entry, it creates no user and no project, and `serve` refuses to start without a
SECRET_KEY unless DEBUG is set.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import environ

SERVE_HELP = "Serve the API, the page and the admin with uvicorn (production defaults)."


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tambo_project.settings")
    # The installed server serves collected static files (compressed, with hashed names); see settings.
    os.environ.setdefault("STATIC_COLLECTED", "true")
    problem = settings_problem()
    if problem is not None and argv[:1] not in ([], ["help"], ["--help"], ["-h"]):
        # One line and exit 2, not a traceback: the settings refuse what the environment says.
        print(f"tambo-server: error: {problem}", file=sys.stderr)
        sys.exit(2)
    if argv[:1] == ["serve"]:
        sys.exit(serve(argv[1:]))
    from django.core.management import execute_from_command_line

    execute_from_command_line(["tambo-server", *argv])
    if not argv or argv[0] in ("help", "--help", "-h"):
        print(f"\n[tambo-server]\n    serve    {SERVE_HELP}")


def settings_problem() -> str | None:
    """What the settings refuse in this environment (a missing SECRET_KEY, a bad value), or None."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings, which check the environment
    except ImproperlyConfigured as exc:
        return str(exc)
    return None


def serve_parser() -> argparse.ArgumentParser:
    env = environ.Env()
    parser = argparse.ArgumentParser(prog="tambo-server serve", description=SERVE_HELP)
    parser.add_argument("--host", default=env.str("HOST", default="127.0.0.1"),
                        help="address to listen on (HOST; default 127.0.0.1, the image sets 0.0.0.0)")
    parser.add_argument("--port", type=int, default=env.int("PORT", default=8000), help="port (PORT; default 8000)")
    parser.add_argument("--workers", type=int, default=env.int("WORKERS", default=1),
                        help="worker processes (WORKERS; default 1); more than one needs PostgreSQL")
    parser.add_argument("--migrate", action="store_true", default=env.bool("MIGRATE", default=False),
                        help="apply database migrations before serving (MIGRATE)")
    parser.add_argument("--no-collectstatic", dest="collectstatic", action="store_false",
                        help="serve the static files collected earlier (`tambo-server collectstatic`)")
    return parser


def serve(argv: list[str]) -> int:
    args = serve_parser().parse_args(argv)
    metrics_dir = metrics_dir_prepare(args.workers)
    try:
        return _serve(args)
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def metrics_dir_prepare(workers: int) -> str | None:
    """With several workers, points PROMETHEUS_MULTIPROC_DIR at an empty folder (docs/operations-telemetry.md).

    prometheus-client's multiprocess mode needs it in each worker's environment before the worker
    imports it, and empty at each start (the files of a previous start would be counted again): an
    operator's folder is emptied of its sample files, else a fresh temporary folder is made, whose
    path is returned to be removed when the server stops.
    """
    if workers <= 1:
        return None
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        os.makedirs(directory, exist_ok=True)
        for path in glob.glob(os.path.join(directory, "*.db")):
            os.remove(path)
        return None
    directory = tempfile.mkdtemp(prefix="tambo-prometheus-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    return directory


def _serve(args: argparse.Namespace) -> int:
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()  # reads .env too, so SECRET_KEY may come from there
    if not os.environ.get("SECRET_KEY") and not settings.DEBUG:
        print("tambo-server: error: SECRET_KEY is not set: set it to a long random value (python -c "
              "'import secrets; print(secrets.token_urlsafe(50))'), or DEBUG=true for a development server.",
              file=sys.stderr)
        return 2
    if args.workers > 1 and settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        print("error: --workers/WORKERS above 1 needs PostgreSQL (DATABASE_URL): the processes share "
              "only the database.", file=sys.stderr)
        return 2
    if args.migrate:
        call_command("migrate", interactive=False, verbosity=1)
    if args.collectstatic:
        static_collect()

    import uvicorn

    uvicorn.run("tambo_project.asgi:application", host=args.host, port=args.port, workers=args.workers,
                # The access line is the telemetry middleware's `tambo.access` (ACCESS_LOG), with the
                # route, run and trace ids; uvicorn's own would log every request a second time.
                lifespan="on", access_log=False, proxy_headers=True,
                # Closes a connection that does not send a request's head in time (docs/operations-faults.md).
                http="tambo_project.http_guard:GuardedHTTPProtocol",
                # Behind a reverse proxy on another address, list it (FORWARDED_ALLOW_IPS) so that
                # the client's address and scheme come from its X-Forwarded-* headers.
                forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
                timeout_graceful_shutdown=float(os.environ.get("GRACEFUL_SHUTDOWN_SECONDS", "10")))
    return 0


def static_collect() -> None:
    """collectstatic, unless STATIC_ROOT holds the collection of exactly the files there are now.

    Compressing the collection takes seconds, and most starts serve the same files as the last one;
    the fingerprint (every source file's name, size and modification time) tells an upgrade apart.
    """
    from django.conf import settings
    from django.contrib.staticfiles import finders
    from django.core.management import call_command

    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in sorted(finder.list(None), key=lambda item: item[0]):
            stat = os.stat(storage.path(path))
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    root = Path(settings.STATIC_ROOT)
    stamp = root / ".collected-from"
    if (root / "staticfiles.json").exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    call_command("collectstatic", interactive=False, verbosity=0)
    stamp.write_text(digest.hexdigest())
