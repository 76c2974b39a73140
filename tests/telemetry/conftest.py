from tests.runs.conftest import runs  # noqa: F401 - fixture: run requests through the live server
