"""Admin URLs as the admin itself builds them.

The admin reads some `_XX` sequences in a primary key as escaped characters (`admin.utils.unquote`:
`_2F` is `/`, `_5F` is `_`, …), so an id such as `proj_5Fab…` must be quoted in a change-page URL, as
the admin's own links are: a hand-built URL finds no object for about one id in two hundred (a flaky
test in CI found it: the change view redirected to the admin index).
"""
from django.contrib.admin.utils import quote
from django.urls import reverse


def admin_url(model, view: str, pk=None) -> str:
    args = [quote(pk)] if pk is not None else []
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)
