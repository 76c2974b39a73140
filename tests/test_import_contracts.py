"""The import contracts in pyproject.toml hold for the tree, and catch an import running the wrong way.

`bin/test` runs `lint-imports` on the tree before the suite; these tests also show that the contracts
are not vacuous: a copy of the tree with one import added against the layers fails them, naming it.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["tambo_project", "gateway", "runs", "threads", "tools", "projects", "providers", "core", "clientsdk"]
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


def test_a_core_module_importing_an_app_breaks_the_layers(tmp_path):
    tree = copy_tree(tmp_path)
    clock = tree / "core" / "clock.py"
    clock.write_text(clock.read_text() + "\nimport runs.models  # noqa: E402,F401\n")

    done = lint_imports(tree)

    assert done.returncode != 0
    assert "core.clock -> runs.models" in done.stdout


def test_the_client_importing_django_breaks_its_contract(tmp_path):
    tree = copy_tree(tmp_path)
    errors = tree / "clientsdk" / "errors.py"
    errors.write_text(errors.read_text() + "\nimport django  # noqa: E402,F401\n")

    done = lint_imports(tree)

    assert done.returncode != 0
    assert "clientsdk.errors -> django" in done.stdout
