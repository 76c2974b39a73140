"""`clientsdk` is its own distribution: in a fresh virtualenv, `pip install ./clientsdk` installs the
client and its needs only, and the README's Python example runs with it against a live server."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "clientsdk" / "README.md"  # the client's guide; docs/clients.md links to its example
SERVER_ONLY = {"django", "djangorestframework", "psycopg", "psycopg-binary", "psycopg-pool", "uvicorn", "mcp",
               "openai", "tambo-django"}

pytestmark = pytest.mark.django_db(transaction=True)


def readme_example() -> str:
    """The Python block of the "A complete example" section of clientsdk/README.md."""
    section = README.read_text().split("## A complete example", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def clean_copy(target: Path) -> Path:
    """The clientsdk folder as a fresh clone has it: no build output, caches or egg-info."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info")
    return shutil.copytree(ROOT / "clientsdk", target / "clientsdk", ignore=ignore)


def isolated_env(**extra: str) -> dict[str, str]:
    # Nothing from this repository's environment may leak into the fresh one.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")}
    # No byte-compiling at install: the client's few imports after it compile less than the install
    # would. PIP_COMPILE=0, not PIP_NO_COMPILE=1, which pip reads as `compile = 1` (docs/testing.md).
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_COMPILE": "0", **extra}


def run(argv: list[str], cwd: Path, **extra_env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=isolated_env(**extra_env), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's python, an empty directory to run it in) after `pip install ./clientsdk`."""
    work = tmp_path_factory.mktemp("clientsdk-dist")
    clean_copy(work)
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=300)
    python = work / "venv" / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", "./clientsdk"], cwd=work)
    # Not `work`: its clientsdk/ folder would be imported instead of the installed package.
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return python, elsewhere


def test_pip_install_clientsdk_brings_the_client_and_nothing_of_the_server(fresh_venv):
    python, work = fresh_venv
    listed = run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=work).stdout
    installed = {line.split("==")[0].lower().replace("_", "-") for line in listed.splitlines()}
    assert {"tambo-clientsdk", "requests", "sseclient-py", "pydantic", "ag-ui-protocol", "jsonpatch"} <= installed
    assert not installed & SERVER_ONLY, installed & SERVER_ONLY
    done = run([str(python), "-c", "import sys, clientsdk, clientsdk.message, clientsdk.wire; "
                                   "from clientsdk import Client, RunError; print(clientsdk.__file__); "
                                   "assert 'django' not in sys.modules"], cwd=work)
    # The installed copy, not this repository's folder.
    assert "site-packages" in done.stdout


def test_the_readme_python_example_runs_in_the_fresh_venv(fresh_venv, live_server_url, api_key):
    python, work = fresh_venv
    done = run([str(python), "-c", readme_example()], cwd=work, TAMBO_BASE_URL=live_server_url, TAMBO_API_KEY=api_key)
    # The offline model calls the tool named in the message, then reports what it returned.
    assert done.stdout.strip() == 'Tool get_weather returned: {"city": "Paris", "forecast": ["sunny", "sunny"]}'


def test_the_wheel_holds_the_package_only_and_offers_mcp_as_an_extra(tmp_path):
    source = clean_copy(tmp_path)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
        cwd=tmp_path)
    [wheel] = (tmp_path / "dist").glob("tambo_clientsdk-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [line for line in archive.read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")]
    folders = {n.rsplit("/", 1)[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert folders == {"clientsdk", "clientsdk/message"}, folders
    assert "clientsdk/wire.py" in names and "clientsdk/message/engine.py" in names
    assert not [n for n in names if "test" in n or n.endswith(("pyproject.toml", "README.md"))]
    assert any(re.match(r'Requires-Dist: mcp>=[\d.]+; extra == "mcp"', line) for line in requires), requires
    assert not any(line.split()[1].lower().startswith(("django", "psycopg", "uvicorn")) for line in requires)
