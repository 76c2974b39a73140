"""The gateway follows the project's models (docs/models.md, last point): /api/models lists them and
the official `openai` package calls them, each project on its own vendor; a server with a real
default model lists and answers with it instead of the offline model."""
from __future__ import annotations

import openai
import pytest
import requests

from gateway.models import allowed_models, default_alias, model_list
from tests.models.conftest import ANTHROPIC_KEY, anthropic_model, apply_file, openai_model
from tests.support.fake_openai import Text

pytestmark = pytest.mark.django_db(transaction=True)


def client_for(url: str, name: str) -> openai.OpenAI:
    from projects.models import ApiKey, Project

    _, raw = ApiKey.generate(Project.objects.get(name=name), "tests")
    return openai.OpenAI(base_url=f"{url}/api", api_key=raw, max_retries=0)


def test_each_projects_key_lists_and_calls_its_own_models(tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: gw-anthropic
    models: [{anthropic_model(ant.fake)}, {openai_model(oai.fake)}]
  - name: gw-openai
    models: [{openai_model(oai.fake, model="gpt-only")}]
""")
    claude, gpt = client_for(models_url, "gw-anthropic"), client_for(models_url, "gw-openai")
    assert [m.id for m in claude.models.list()] == ["claude-fake", "gpt-fake"]
    assert [m.id for m in gpt.models.list()] == ["gpt-only"]
    ant.script(Text(["Hi from ", "Claude"]))
    chunks = list(claude.chat.completions.create(model="claude-fake", stream=True,
                                                 messages=[{"role": "user", "content": "hi"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hi from Claude"
    assert ant.requests[0].api_key == ANTHROPIC_KEY and ant.requests[0].body["model"] == "claude-fake"
    oai.script(Text("plain"))
    # No model named (the SDK always names one): the project's first model answers.
    answer = requests.post(f"{models_url}/api/chat/completions", timeout=30, headers={"x-api-key": gpt.api_key},
                           json={"messages": [{"role": "user", "content": "hi"}]}).json()
    assert answer["choices"][0]["message"]["content"] == "plain" and oai.requests[0].body["model"] == "gpt-only"
    with pytest.raises(openai.BadRequestError) as refused:
        gpt.chat.completions.create(model="claude-fake", messages=[{"role": "user", "content": "hi"}])
    assert refused.value.code == "model_not_found"


def test_a_server_with_a_real_default_model_lists_it_first(settings):
    settings.MODEL_PROVIDER, settings.OPENAI_MODEL, settings.GATEWAY_DEFAULT_MODEL = "openai", "gpt-4o-mini", ""
    settings.GATEWAY_MODELS = {}
    assert default_alias() == "gpt-4o-mini" and allowed_models()["gpt-4o-mini"].provider == "openai"
    assert [m["id"] for m in model_list()["data"]] == ["gpt-4o-mini", "offline"]
    settings.MODEL_PROVIDER = "offline"
    assert default_alias() == "offline" and list(allowed_models()) == ["offline"]


@pytest.mark.parametrize("vendor_name", ["oai", "ant"])
def test_a_reasoning_model_answers_through_the_gateway_with_its_reasoning_as_reasoning_content(
        tmp_path, models_url, vendor_name, request):
    # The gateway's chunk encoder refused reasoning deltas (TypeError mid-stream) before.
    vendor = request.getfixturevalue(vendor_name)
    spec = openai_model(vendor.fake) if vendor_name == "oai" else anthropic_model(vendor.fake)
    apply_file(tmp_path, f"projects:\n  - name: gw-thinker\n    models: [{spec}]\n")
    client = client_for(models_url, "gw-thinker")
    model = "gpt-fake" if vendor_name == "oai" else "claude-fake"
    vendor.script(Text(["Blue ", "light."], reasoning=["Think ", "first."]), Text("Blue light.", reasoning=["Hm."]))
    chunks = list(client.chat.completions.create(model=model, stream=True,
                                                 messages=[{"role": "user", "content": "sky?"}]))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == "Blue light."
    assert "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas) == "Think first."
    whole = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "sky?"}])
    assert whole.choices[0].message.content == "Blue light."
