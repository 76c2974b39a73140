# The production image: `tambo-server` on uvicorn, as a non-root user, with the locked dependencies.
#   docker build -t tambo-django .
#   docker run --rm -e SECRET_KEY=... -e DATABASE_URL=postgres://... tambo-django migrate
#   docker run -d -p 127.0.0.1:8000:8000 -e SECRET_KEY=... -e DATABASE_URL=... tambo-django
# docs/deployment.md explains each choice; bin/image-check builds and runs it with podman.

# Any Debian bookworm image with Python 3.11 (python3 and its venv module) will do as the base; both
# stages must use the same one, since the virtualenv is copied from the first to the second.
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/tambo
# The lock first, so that a change to the code alone reuses this layer.
COPY requirements.lock /src/requirements.lock
RUN /opt/tambo/bin/pip install --require-hashes --no-deps -r /src/requirements.lock
COPY . /src
# The checkout's two distributions, the client and the server; their dependencies came from the lock.
RUN /opt/tambo/bin/pip install --no-deps /src/clientsdk /src \
 && /opt/tambo/bin/pip check
# Static files are collected (compressed, hashed names) once, here, into the image.
RUN cd /tmp && SECRET_KEY="$(/opt/tambo/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))')" STATIC_ROOT=/opt/tambo/static \
    /opt/tambo/bin/tambo-server collectstatic --noinput -v 0

FROM ${BASE}
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/tambo --create-home tambo
COPY --from=build /opt/tambo /opt/tambo
ENV PATH=/opt/tambo/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    STATIC_ROOT=/opt/tambo/static \
    HOST=0.0.0.0 \
    PORT=8000
USER tambo
# SQLite's default file, if no DATABASE_URL is given, goes to /var/lib/tambo/var (mount a volume).
WORKDIR /var/lib/tambo
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=2)"]
# Any manage.py command: `migrate`, `createapikey --project NAME`, `createsuperuser`, `serve --migrate`.
# With WORKERS > 1, `serve` gives the workers an empty PROMETHEUS_MULTIPROC_DIR (under /tmp) at each start.
ENTRYPOINT ["tambo-server"]
CMD ["serve", "--no-collectstatic"]
