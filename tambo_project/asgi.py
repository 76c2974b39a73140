"""ASGI entry point: `uvicorn tambo_project.asgi:application`.

Streaming runs are async views, so thousands of open SSE streams share one event loop instead of
each holding a thread. Static files are served by WhiteNoise at the ASGI edge (static_files.py), the
ASGI lifespan starts and stops what the process runs in the background, its runtime (lifespan.py,
runtime.py).
"""
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tambo_project.settings")
django.setup(set_prefix=False)  # what django.core.asgi.get_asgi_application does before its handler

# Django's handler, closing a response on the event loop when no thread is needed (asgi_handler.py).
from tambo_project.asgi_handler import ASGIHandler  # noqa: E402

django_application = ASGIHandler()

# The limit answers in the routes' own error shapes, built by modules that need Django set up first.
from tambo_project.asgi_limits import BodySizeLimit  # noqa: E402
from tambo_project.static_files import StaticFiles  # noqa: E402

application = BodySizeLimit(StaticFiles(django_application))

from tambo_project import asgi_signals  # noqa: E402

asgi_signals.install()  # no thread per request for Django's start/finish bookkeeping

# Import the heavy modules of the run path (the model provider) now rather than inside the first run,
# which would otherwise wait for them. The MCP SDK, half of the app's import time (about 1 s of CPU), is
# imported in the background once the process starts (runtime.py), so a process is ready sooner and only
# a run that uses MCP in its first second may wait for it.
import runs.loop  # noqa: E402,F401
from providers import get_provider  # noqa: E402

get_provider()

from tambo_project.lifespan import Lifespan  # noqa: E402

application = Lifespan(application)
