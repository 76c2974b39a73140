"""A vendor answering something that is not an answer (an HTML page, a 200 whose body is an error,
garbage in the stream) ends the run with a clear RUN_ERROR on either provider: no 500, the thread's
lock freed, and the thread's next run answered."""
from __future__ import annotations

import pytest

from tests.models.conftest import anthropic_model, apply_file, openai_model, project_runs
from tests.runs.conftest import text_of
from tests.support.fake_openai import Raw, Text

pytestmark = pytest.mark.django_db(transaction=True)

HTML = b"<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>"
NOT_ANSWERS = {
    "an HTML page with 200": Raw(HTML),
    "an HTML page with 502": Raw(HTML, status=502),
    "a 200 whose body is an error": Raw(b'{"error": {"type": "overloaded_error", "message": "busy"}}',
                                        content_type="application/json"),
    "garbage in the stream": Raw(b"data: {not json\n\n", content_type="text/event-stream"),
}


@pytest.mark.parametrize("vendor_name", ["oai", "ant"])
@pytest.mark.parametrize("answer", list(NOT_ANSWERS))
def test_a_vendor_answering_no_answer_is_a_run_error_and_the_thread_goes_on(tmp_path, models_url, vendor_name,
                                                                            answer, request):
    vendor = request.getfixturevalue(vendor_name)
    spec = openai_model(vendor.fake) if vendor_name == "oai" else anthropic_model(vendor.fake)
    apply_file(tmp_path, f"projects:\n  - name: bad-vendor\n    models: [{spec}]\n")
    vendor.script(NOT_ANSWERS[answer], Text("Fine now."))
    runs = project_runs(models_url, "bad-vendor")
    thread_id, events = runs.run_new("hello")
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "LLM_SERVER_ERROR", error
    assert "html" not in error["message"].lower() and "busy" not in error["message"]
    assert runs.wait_idle(thread_id)["runStatus"] == "idle"
    again = runs.run(thread_id, "hello again", previousRunId=events[0]["runId"])
    assert again[-1]["type"] == "RUN_FINISHED" and text_of(again) == "Fine now."
