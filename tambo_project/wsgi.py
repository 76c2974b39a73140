"""WSGI entry point, for management tooling only: streaming runs need the ASGI server."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tambo_project.settings")
application = get_wsgi_application()
