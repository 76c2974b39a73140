"""clientsdk works where Django (and the server's packages) cannot be imported."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import importlib, json, pkgutil, sys

    SERVER_PACKAGES = {"django", "rest_framework", "tambo_project", "core", "projects", "threads", "runs",
                       "assist", "providers", "gateway", "tools"}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in SERVER_PACKAGES:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Blocker())
    try:
        import django  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("the blocker does not work")

    import clientsdk
    for info in pkgutil.walk_packages(clientsdk.__path__, "clientsdk."):
        # setup.py is the distribution's build script (left out of the wheel), not a module of it.
        if info.name not in ("clientsdk.__main__", "clientsdk.setup"):
            importlib.import_module(info.name)

    from clientsdk import Client, ThreadSnapshot, accumulate, parse_event
    from clientsdk.partial_json import parse_partial

    snap = ThreadSnapshot()
    for raw in [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "ok"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]:
        snap = accumulate(snap, parse_event(json.dumps(raw)))
    assert snap.last_text == "ok" and snap.status == "finished", snap
    assert parse_partial('{"a": [1, "b') == {"a": [1, "b"]}
    client = Client("http://127.0.0.1:9", "k", "u")
    client.register_tool("echo", lambda text: text, "Echo", {"type": "object"})
    body = client.build_run_body({"role": "user", "content": [{"type": "text", "text": "hi"}]}, previous_run_id=None)
    assert body["tools"][0]["name"] == "echo"
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in SERVER_PACKAGES)
    assert not leaked, leaked
    print("CLIENTSDK-OK")
""")


def test_clientsdk_imports_and_works_without_django():
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("CLIENTSDK-OK")
