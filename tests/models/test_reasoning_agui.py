"""Reasoning on the plain AG-UI route (`POST /v1/agui`): from either provider it streams as AG-UI
1.0's REASONING_* events, which the generic client `@ag-ui/client` verifies and files as `reasoning`
messages, while /v1 keeps the THINKING_* names @tambo-ai/client reads."""
from __future__ import annotations

import pytest

from projects.models import ApiKey, Project
from tests.models.conftest import anthropic_model, apply_file, openai_model
from tests.support.fake_openai import Text
from tests.test_compat_agui import run_scenario

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]


@pytest.mark.parametrize("vendor_name", ["oai", "ant"])
def test_a_generic_agui_client_receives_reasoning_as_reasoning_events(tmp_path, models_url, vendor_name, request):
    vendor = request.getfixturevalue(vendor_name)
    spec = openai_model(vendor.fake) if vendor_name == "oai" else anthropic_model(vendor.fake)
    apply_file(tmp_path, f"projects:\n  - name: agui-thinker\n    models: [{spec}]\n")
    vendor.script(Text(["Rayleigh ", "scattering."], reasoning=["Light ", "scatters."]))
    _, raw = ApiKey.generate(Project.objects.get(name="agui-thinker"), "tests")
    result = run_scenario("reasoning_run", models_url, raw)
    types = result["types"]
    assert types[types.index("REASONING_START"):types.index("REASONING_END") + 1] == [
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
        "REASONING_END"]
    assert types.index("REASONING_END") < types.index("TEXT_MESSAGE_START")
    assert not any(kind.startswith("THINKING") for kind in types)
    assert result["reasoning"] == ["Light scatters."]
    assert result["answer"] == ["Rayleigh scattering."]


def test_a_0_0_x_agui_client_receives_reasoning_as_thinking_events(tmp_path, models_url, oai):
    # @ag-ui/client 0.0.59 sends no protocolVersion: it gets the THINKING_* names every 0.0.x client knows.
    apply_file(tmp_path, f"projects:\n  - name: agui-thinker\n    models: [{openai_model(oai.fake)}]\n")
    oai.script(Text(["Rayleigh ", "scattering."], reasoning=["Light ", "scatters."]))
    _, raw = ApiKey.generate(Project.objects.get(name="agui-thinker"), "tests")
    result = run_scenario("reasoning_run", models_url, raw, "ag-ui-client-0059")
    types = result["types"]
    assert types[types.index("THINKING_START"):types.index("THINKING_END") + 1] == [
        "THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END",
        "THINKING_END"]
    assert not any(kind.startswith("REASONING") for kind in types)
    assert result["answer"] == ["Rayleigh scattering."]
