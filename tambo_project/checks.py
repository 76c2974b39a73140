"""System checks of the project's own configuration.

Django's deploy checks security.W001-W003 look for Django's own class paths in MIDDLEWARE. This
project lists subclasses of those classes instead (tambo_project/inline_middleware.py: the same
middleware, run on the event loop), so those three checks warned about middleware that is there.
They are silenced in the settings (SILENCED_SYSTEM_CHECKS) and this check makes the same three
demands of the classes themselves: a MIDDLEWARE without Django's SecurityMiddleware,
XFrameOptionsMiddleware or CsrfViewMiddleware (or a subclass) still warns, as tambo.W001-W003.
"""
from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register
from django.utils.module_loading import import_string

REQUIRED = (
    ("tambo.W001", "django.middleware.security.SecurityMiddleware",
     "SECURE_HSTS_SECONDS, SECURE_CONTENT_TYPE_NOSNIFF, SECURE_REFERRER_POLICY and SECURE_SSL_REDIRECT have no effect"),
    ("tambo.W002", "django.middleware.clickjacking.XFrameOptionsMiddleware",
     "pages are not served with an X-Frame-Options header"),
    ("tambo.W003", "django.middleware.csrf.CsrfViewMiddleware",
     "the page's session requests have no cross-site request forgery protection"),
)
# The Django checks this one replaces: they compare class paths, so they miss the subclasses.
REPLACED = ["security.W001", "security.W002", "security.W003"]


@register(Tags.security, deploy=True)
def required_middleware(app_configs, **kwargs) -> list[Warning]:
    classes = [import_string(path) for path in settings.MIDDLEWARE]
    return [Warning(f"MIDDLEWARE has no {base} (nor a subclass of it): {effect}.", id=check_id)
            for check_id, base, effect in REQUIRED
            if not any(issubclass(cls, import_string(base)) for cls in classes if isinstance(cls, type))]
