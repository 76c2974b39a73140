"""The import contracts in pyproject.toml hold for the tree, and catch an import running the wrong way.

`bin/test` runs `lint-imports` on the tree before the suite; these tests also show that the contracts
are not vacuous: a copy of the tree with one import added against the layers fails them, naming it.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["tambo_project", "retention", "gateway", "assist", "runs", "threads", "tools", "projects", "providers", "core", "clientsdk"]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    # The copy is found before the installed tree: the contracts are checked against its sources.
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=tree, capture_output=True, text=True, timeout=300,
                          env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(tree)})


def copy_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "pyproject.toml", tree)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return tree


def test_the_tree_keeps_its_import_contracts(tmp_path):
    done = lint_imports(copy_tree(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize("module, imported", [
    ("core.clock", "runs.models"),  # a core helper reaching up into an app
    ("threads.services", "runs.lock"),  # a domain app reaching up into the run lifecycle
    ("gateway.views", "runs.stream.sse"),  # one interface into its sibling
    ("clientsdk.errors", "django"),  # the client needing the server's framework
    ("assist.names", "runs.history"),  # thread names and suggestions reaching into the run app
    ("runs.stream.feeds", "runs.recovery.leases"),  # streaming reaching into crash recovery
    ("runs.stream.sse", "runs.services"),  # streaming reaching into the lifecycle that writes the run
    ("runs.services", "runs.agui.services"),  # the lifecycle depending on its AG-UI adapter
    ("runs.recovery.settle", "runs.agui.protocol"),  # recovery depending on the AG-UI adapter
    ("runs.begin", "runs.services"),  # the one run start depending on one of its entrances
    ("runs.lock", "runs.recovery.settle"),  # taking a lock importing crash recovery
    ("runs.control", "retention.policy"),  # the run lifecycle reaching up into the retention job
    ("tambo_project.middleware", "gateway.errors"),  # the configuration layer choosing an app's error shape
])
def test_an_import_running_the_wrong_way_breaks_a_contract(tmp_path, module, imported):
    tree = copy_tree(tmp_path)
    source = tree / (module.replace(".", "/") + ".py")
    source.write_text(source.read_text() + f"\nimport {imported}  # noqa: E402,F401\n")

    done = lint_imports(tree)

    assert done.returncode != 0
    assert f"{module} -> {imported}" in done.stdout
