"""ASGI entry point: `uvicorn tambo_project.asgi:application`.

Streaming runs are async views, so thousands of open SSE streams share one event loop instead of
each holding a thread. Static files (the browser page's JS and CSS) are served by Django's ASGI
static handler, which needs no build step; a large deployment can put a CDN or nginx in front.
"""
import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tambo_project.settings")
django_application = get_asgi_application()

# The limit answers in the routes' own error shapes, built by modules that need Django set up first.
from tambo_project.asgi_limits import BodySizeLimit  # noqa: E402

application = BodySizeLimit(ASGIStaticFilesHandler(django_application))

from tambo_project import asgi_signals  # noqa: E402

asgi_signals.install()  # no thread per request for Django's start/finish bookkeeping

# Import the heavy modules of the run path (the MCP SDK, the model provider) now rather than
# inside the first run, which would otherwise wait seconds for them.
import runs.loop  # noqa: E402,F401
import tools.mcp_client  # noqa: E402,F401
from providers import get_provider  # noqa: E402

get_provider()

from telemetry import metrics  # noqa: E402

metrics.forget_dead_processes()  # a replaced worker's open streams are not open any more
metrics.serve_metrics_port()
