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


def project_change_post(client, project, **fields):
    """Saves `project`'s admin change form as the admin's page would: its required fields as they
    are by default, no API key rows, and `fields` on top."""
    from projects.models import Project

    form = {"name": project.name, "system_prompt": "", "max_tool_calls_per_turn": 100, "user_token_claim": "sub",
            "api_keys-TOTAL_FORMS": 0, "api_keys-INITIAL_FORMS": 0, **fields}
    return client.post(admin_url(Project, "change", project.pk), form)
