"""The admin's editor of a project's settings document (docs/projects.md): the same schema as the
project file, and API keys that are written, never shown.

The document is edited as JSON. Every stored key appears as STORED_MARK: left as it is, the stored
ciphertext is kept (for the model at the same position); replaced by `env:NAME` or a new literal key,
the new value is used, a literal one encrypted (projects/secrets.py). Left blank, the settings are not
changed; `{}` clears them.
"""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ImproperlyConfigured
from pydantic import ValidationError

from projects.config import ProjectSettings, project_settings_dump
from projects.project_file import fault_path
from projects.secrets import is_stored, secret_store

STORED_MARK = "(stored: type a new key or env:NAME to replace it)"


def _specs(document: dict[str, Any]) -> list[dict[str, Any]]:
    specs = [m for m in document.get("models") or [] if isinstance(m, dict)]
    if isinstance(document.get("transcription"), dict):
        specs.append(document["transcription"])
    return specs


def masked(document: dict[str, Any] | None) -> str:
    shown = json.loads(json.dumps(document or {}))
    for spec in _specs(shown):
        if is_stored(spec.get("apiKey")):
            spec["apiKey"] = STORED_MARK
        for name, value in _headers(spec).items():  # an agent's headers are secrets too
            if is_stored(value):
                spec["headers"][name] = STORED_MARK
    return json.dumps(shown, indent=2)


def _headers(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["headers"] if isinstance(spec.get("headers"), dict) else {}


def settings_from_form(text: str, stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The document to store, or None to keep the stored one; raises forms.ValidationError naming
    the path of each fault."""
    if not text.strip():
        return None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise forms.ValidationError(f"Not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise forms.ValidationError("The settings must be a JSON object.")
    old_specs = _specs(stored or {})
    try:
        for index, spec in enumerate(_specs(document)):
            key = spec.get("apiKey")
            if key == STORED_MARK:
                previous = old_specs[index].get("apiKey") if index < len(old_specs) else None
                if not is_stored(previous):
                    raise forms.ValidationError("A stored key was moved to a model that had none: type the key again.")
                spec["apiKey"] = previous
            elif isinstance(key, str):
                spec["apiKey"] = secret_store(key)
            old_headers = _headers(old_specs[index]) if index < len(old_specs) else {}
            for name, value in _headers(spec).items():
                if value == STORED_MARK:
                    if not is_stored(old_headers.get(name)):
                        raise forms.ValidationError(f"The stored header {name} is gone: type its value again.")
                    spec["headers"][name] = old_headers[name]
                elif isinstance(value, str):
                    spec["headers"][name] = secret_store(value)
        return project_settings_dump(ProjectSettings.model_validate(document))
    except ValidationError as exc:
        raise forms.ValidationError([f"{fault_path(e['loc'])}: {e['msg']}" for e in exc.errors()]) from None
    except ImproperlyConfigured as exc:
        raise forms.ValidationError(str(exc)) from None


class SettingsField(forms.CharField):
    def __init__(self, **kwargs):
        super().__init__(required=False, widget=forms.Textarea(attrs={"rows": 16, "cols": 100, "spellcheck": "false"}),
                         label="Settings (models, limits, access)",
                         help_text="JSON, with the keys of the project file (docs/projects.md). Stored API keys are "
                                   "never shown. Blank: unchanged; {}: cleared.", **kwargs)
