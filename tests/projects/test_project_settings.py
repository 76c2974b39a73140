"""A project's settings document (projects/config.py): validated, stored compactly, parsed once per version."""
import pytest
from pydantic import ValidationError

from projects.config import ProjectSettings, project_settings, project_settings_save


def test_it_refuses_unknown_keys_and_wrong_types():
    with pytest.raises(ValidationError) as exc:
        ProjectSettings.model_validate({"tokenRequierd": True})
    assert exc.value.errors()[0]["loc"] == ("tokenRequierd",)
    with pytest.raises(ValidationError):
        ProjectSettings.model_validate({"limits": {"runsPerMinute": "10"}})
    with pytest.raises(ValidationError):
        ProjectSettings.model_validate({"limits": {"runsPerMinute": -1}})
    with pytest.raises(ValidationError):
        ProjectSettings.model_validate({"models": [{"provider": "openai", "model": "m", "apiKey": "env:1X"}]})


def test_a_project_without_settings_reads_the_defaults(project):
    assert project_settings(project) == ProjectSettings()


def test_a_saved_change_is_read_back_by_a_fresh_row(project):
    from projects.models import Project

    project_settings_save(project, ProjectSettings.model_validate({"tokenRequired": True, "limits": {"runsPerMinute": 5}}))
    fresh = Project.objects.get(pk=project.pk)
    assert fresh.settings == {"tokenRequired": True, "limits": {"runsPerMinute": 5}}
    assert project_settings(fresh).token_required is True
    project_settings_save(fresh, ProjectSettings.model_validate({"tokenRequired": False}))
    again = Project.objects.get(pk=project.pk)
    assert again.settings_version == fresh.settings_version
    assert project_settings(again).token_required is False
