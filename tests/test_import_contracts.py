"""The import contracts in pyproject.toml hold for the tree, and catch an import running the wrong way.

`bin/test` runs `lint-imports` on the tree before the suite; these tests also show that the contracts
are not vacuous: a copy of the tree with one import added against the layers fails them, naming it, and a
copy with SQL run outside a `statements.py` fails the contract that keeps hand-written SQL there.
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


# Imports running the wrong way, each against one contract; all are added to one copy of the tree, so
# one run of lint-imports (about 2 s of CPU each) checks them all: every one must be named as broken.
WRONG_WAY = [
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
    ("runs.renewal", "runs.recovery.leases"),  # the lease renewal's lane taking on the watcher's other work
    ("runs.control", "retention.policy"),  # the run lifecycle reaching up into the retention job
    ("tambo_project.middleware", "gateway.errors"),  # the configuration layer choosing an app's error shape
]


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the tree with every import of WRONG_WAY added, and SQL_ELSEWHERE run
    outside a statements module (and the same code in one, where it belongs)."""
    tree = copy_tree(tmp_path_factory.mktemp("broken"))
    for module, imported in WRONG_WAY:
        source = tree / (module.replace(".", "/") + ".py")
        source.write_text(source.read_text() + f"\nimport {imported}  # noqa: E402,F401\n")
    (tree / "projects" / "sql_elsewhere.py").write_text(SQL_ELSEWHERE)
    statements = tree / "projects" / "statements.py"
    statements.write_text(statements.read_text() + "\n\n" + SQL_ELSEWHERE)
    done = lint_imports(tree)
    assert done.returncode != 0
    return done


@pytest.mark.parametrize("module, imported", WRONG_WAY)
def test_an_import_running_the_wrong_way_breaks_a_contract(broken, module, imported):
    assert f"{module} -> {imported}" in broken.stdout, broken.stdout


# Hand-written SQL of every kind the contract knows (core/contracts.py), as a module outside statements.py would run it.
SQL_ELSEWHERE = """from django.db import connection
from django.db.models.expressions import RawSQL

from core.statements import execute
from projects.models import Project


def counts():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM projects_project")
        return cursor.fetchone()


def raw_ones():
    return (list(Project.objects.raw("SELECT * FROM projects_project")),
            Project.objects.extra(where=["1 = 1"]), Project.objects.annotate(one=RawSQL("SELECT 1", [])))
"""


def test_the_sql_scan_finds_each_way_to_run_sql():
    from core.contracts import sql_calls

    assert [what for _, what in sql_calls(SQL_ELSEWHERE)] == [
        "imports core.statements.execute", "connection.cursor(…)", "cursor.execute(…)",
        "Project.objects.raw(…)", "Project.objects.extra(…)", "RawSQL(…)"]
    # Methods of other names, and an `execute` that is not imported from a statements module, are not SQL.
    assert sql_calls("from runs import toolbox\nasync def f(t):\n    await t.run(1)\n    t._execute(2)\n"
                     "    execute(3)\n") == []


def test_sql_outside_a_statements_module_breaks_a_contract(broken):
    assert "Hand-written SQL run outside a statements module:" in broken.stdout, broken.stdout
    for line, what in [(4, "imports core.statements.execute"), (9, "connection.cursor(…)"), (10, "cursor.execute(…)"),
                       (15, "Project.objects.raw(…)"), (16, "Project.objects.extra(…)"), (16, "RawSQL(…)")]:
        assert f"projects.sql_elsewhere:{line} {what}" in broken.stdout, broken.stdout
    assert "projects.statements:" not in broken.stdout
