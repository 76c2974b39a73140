"""An import-linter contract type of our own: hand-written SQL runs only in modules named `statements`
(docs/architecture.md#the-contracts). `lint-imports` checks it with the others (pyproject.toml
`[tool.importlinter]`, `contract_types`).

Why a contract type of our own: import-linter's built-in contracts see imports only, and what runs
hand-written SQL is not an import. Forbidding `django.db` would forbid the ORM and `transaction` with
it (and import-linter cannot forbid a part of an external package such as `django.db.connection`
anyway); psycopg's own connections run SQL with no Django import at all. So this contract reads each
module's source (its syntax tree: nothing is imported or run) and reports every call that runs SQL
text, `<x>.execute(…)`, `.executemany(…)`, `.executescript(…)`, `.cursor(…)`, `.raw(…)`, `.extra(…)`,
`RawSQL(…)`, and every import of `core/statements.py`'s `execute`, in a module that the contract's
`allowed_modules` patterns do not match.

It lives in core/ because import-linter imports it by name from the tree it checks (tests/
test_import_contracts.py checks a copy of the tree), and imports only import-linter (and rich, its
console): no Django, no settings, nothing of the server. Nothing in the server imports it.
"""
from __future__ import annotations

import ast
import importlib.util
from fnmatch import fnmatchcase
from pathlib import Path

from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from rich.markup import escape

# Calls that hand SQL text to a database: DB-API cursors and connections (Django's and psycopg's),
# the connection's cursor itself, and Django's raw querysets.
SQL_METHODS = frozenset({"execute", "executemany", "executescript", "cursor", "raw", "extra"})
SQL_CLASSES = frozenset({"RawSQL"})
# Functions of a statements module that run whatever SQL text they are given.
SQL_RUNNERS = frozenset({"execute"})


def sql_calls(source: str) -> list[tuple[int, str]]:
    """(line, what) for each place in `source` that runs hand-written SQL, as the contract sees it:
    `what` is `receiver.method(…)`, `RawSQL(…)` or `imports module.execute`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1] == "statements":
            found += [(node.lineno, f"imports {node.module}.{alias.name}") for alias in node.names
                      if alias.name in SQL_RUNNERS]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in SQL_CLASSES:
            found.append((node.lineno, f"{name}(…)"))
        elif isinstance(func, ast.Attribute) and name in SQL_METHODS:
            found.append((node.lineno, f"{ast.unparse(func.value)}.{name}(…)"))
    return sorted(found)


class SqlHomeContract(Contract):
    """Only the modules matching `allowed_modules` (fnmatch patterns of module names, e.g.
    `*.statements`) run hand-written SQL.

    Options:
        - allowed_modules: patterns of the modules that may.
        - ignore_calls:    `module: receiver.method` entries for calls that only look like SQL (a
                           method of the same name on something else); say why beside each. An
                           entry that matches nothing breaks the contract, so the list stays true.
    """

    allowed_modules = fields.ListField(subfield=fields.StringField())
    ignore_calls = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph, verbose: bool) -> ContractCheck:
        roots = set(self.session_options["root_packages"])
        ignored = {entry.replace(" ", "") for entry in self.ignore_calls or ()}
        used: set[str] = set()
        violations = []
        for module in sorted(graph.modules):
            if module.split(".")[0] not in roots or any(fnmatchcase(module, p) for p in self.allowed_modules):
                continue
            path = _module_file(module)
            if path is None:
                continue
            for line, what in sql_calls(path.read_text()):
                key = f"{module}:{what.removesuffix('(…)')}"
                if key in ignored:
                    used.add(key)
                    continue
                violations.append({"module": module, "line": line, "what": what})
        unmatched = sorted(ignored - used)
        return ContractCheck(kept=not violations and not unmatched,
                             metadata={"violations": violations, "unmatched": unmatched})

    def render_broken_contract(self, check: ContractCheck) -> None:
        # rich prints these (import-linter's console): markup escaped, one short line per finding.
        if check.metadata["violations"]:
            output.print_error("Hand-written SQL run outside a statements module:")
            for v in check.metadata["violations"]:
                output.print_error(escape(f"-   {v['module']}:{v['line']} {v['what']}"), bold=False)
            output.new_line()
        for entry in check.metadata["unmatched"]:
            output.print_error(escape(f"ignore_calls entry {entry} matches no call: remove it"), bold=False)
        output.print("Move the statement, and the small function that runs it, into the app's statements.py; "
                     "callers import the function.")


def _module_file(module: str) -> Path | None:
    """The source file of `module`, found from its root package's location without importing it."""
    root, *rest = module.split(".")
    spec = importlib.util.find_spec(root)  # a top-level name: found on sys.path, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    candidates = [base / "__init__.py", *([base.with_suffix(".py")] if rest else [])]
    return next((candidate for candidate in candidates if candidate.is_file()), None)
