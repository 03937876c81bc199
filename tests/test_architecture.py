"""The layout the operations-layer issue set up, checked so it stays true: no store-kind branch
outside `store/`, no rendering below `cli/`, the method table, `session.store` honoured by every
command, and the import-layer contracts of pyproject.toml."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OPENCLAW_FIXTURE, ROOT, run_cli

PACKAGE = ROOT / "openclaw_cli"
STORE_CLASSES = {"LegacyStore", "SqliteStore", "OpenClawDbStore"}
KIND_NAMES = {"KIND_LEGACY", "KIND_SQLITE", "KIND_OPENCLAW_SQLITE"}
KIND_VALUES = {"legacy", "sqlite", "openclaw-sqlite"}


def _modules_outside_store() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "store" not in p.relative_to(PACKAGE).parts[:1]]


def _kind_branches(tree: ast.AST) -> list[int]:
    """Lines comparing `<x>.kind` with a store kind, naming a KIND_* constant or testing an
    instance against a store class."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            has_kind = any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides)
            has_value = any(isinstance(s, ast.Constant) and s.value in KIND_VALUES for s in sides)
            if has_kind and has_value:
                found.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id in KIND_NAMES:
            found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            names = (
                {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if len(node.args) > 1
                else set()
            )
            if names & STORE_CLASSES:
                found.append(node.lineno)
    return found


def test_no_store_kind_branch_outside_the_store_package() -> None:
    offenders = {}
    for path in _modules_outside_store():
        lines = _kind_branches(ast.parse(path.read_text(), str(path)))
        if lines:
            offenders[str(path.relative_to(ROOT))] = lines
    assert offenders == {}, (
        f"branch on the store kind outside store/ (add a protocol method or layout fact): {offenders}"
    )


def test_the_kind_check_finds_a_branch() -> None:
    """The checker itself must see the patterns it forbids (else the test above proves nothing)."""
    code = 'if store.kind == "legacy": pass\nif isinstance(s, (SqliteStore, X)): pass\nx = KIND_LEGACY\n'
    assert _kind_branches(ast.parse(code)) == [1, 2, 3]


def test_layer_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed in this environment (scripts/test installs it)")
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_method_table_runs_locally_and_refuses_unknown_methods(legacy_fixture_state: Path) -> None:
    from openclaw_cli.errors import UsageError
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import METHODS, call
    from openclaw_cli.paths import resolve_paths

    assert {
        "sessions.list",
        "sessions.cleanup",
        "sessions.compact",
        "agents.list",
        "agents.delete",
        "status",
    } <= set(METHODS)
    for m in METHODS.values():
        assert m.scope in ("operator.read", "operator.write", "operator.admin"), m
    ctx = Context.load(resolve_paths(), clock=lambda: 1796000000000)
    listed = call(ctx, "sessions.list", {"limit": 3})
    assert listed["count"] == 3 and listed["totalCount"] == 12
    cleanup = call(ctx, "sessions.cleanup", {"dryRun": True})
    assert cleanup["dryRun"] is True and cleanup["beforeCount"] == 12
    with pytest.raises(UsageError, match="unknown method: sessions.nope"):
        call(ctx, "sessions.nope", {})


def test_session_store_config_is_honoured_by_every_command(state_dir: Path, tmp_path: Path) -> None:
    """A custom `session.store` (with `{agentId}`): listing, status, cleanup and compaction look at
    the same store before and after the migration imported it."""
    custom = tmp_path / "custom" / "main"
    shutil.copytree(OPENCLAW_FIXTURE / "legacy-state" / "agents" / "main" / "sessions", custom)
    (state_dir / "openclaw.json").write_text(
        json.dumps({"session": {"store": str(tmp_path / "custom" / "{agentId}" / "sessions.json")}})
    )

    def listed() -> dict:
        proc = run_cli("sessions", "--json", "--limit", "all", "--all")  # archived rows too (the orphan)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    before = listed()
    assert before["path"] == str(custom / "sessions.json") and before["count"] == 12
    proc = run_cli("doctor", "--session-sqlite", "import", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    db = custom / "openclaw-agent.sqlite"  # storage-migration.md §1.4: beside a custom store
    assert db.exists() and not (state_dir / "agents" / "main" / "agent").exists()
    after = listed()
    assert after["path"] == str(db) and after["count"] == 13  # + the recovered orphan
    status = json.loads(run_cli("status", "--json", "--no-probe").stdout)
    assert status["sessions"]["paths"] == [str(db)] and status["sessions"]["count"] == 13
    dry = json.loads(run_cli("sessions", "cleanup", "--dry-run", "--json").stdout)
    assert dry["storePath"] == str(db) and dry["beforeCount"] == 13
    compact = json.loads(
        run_cli("compact", "agent:main:main", "--dry-run", "--json", "--tokenizer", "estimate").stdout
    )
    assert compact["path"] == str(db)


_STORE_NAMES = {"store", "st"}


def _store_probes_and_untyped(tree: ast.AST) -> list[int]:
    """Lines probing a store with hasattr/getattr, or taking a `store`/`st` parameter typed Any."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("hasattr", "getattr")
        ):
            target = node.args[0] if node.args else None
            if (
                isinstance(target, ast.Name)
                and target.id in _STORE_NAMES
                or isinstance(target, ast.Attribute)
                and target.attr == "store"
            ):
                found.append(node.lineno)
        elif (
            isinstance(node, ast.arg)
            and node.arg in _STORE_NAMES
            and isinstance(node.annotation, ast.Name)
            and node.annotation.id == "Any"
        ):
            found.append(node.lineno)
    return found


def test_stores_are_typed_and_never_probed() -> None:
    """Issue 24: every method the domain calls is declared on SessionStore, and a store parameter
    says what it is (SessionStore, or the one store class a write module serves)."""
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        lines = _store_probes_and_untyped(ast.parse(path.read_text(), str(path)))
        if lines:
            offenders[str(path.relative_to(ROOT))] = lines
    assert offenders == {}, f"store probed with hasattr/getattr or typed Any: {offenders}"


def test_the_probe_check_finds_a_probe() -> None:
    code = 'def f(store: Any, st: "X"):\n    hasattr(store, "x")\n    getattr(self.store, "y", None)\n'
    assert _store_probes_and_untyped(ast.parse(code)) == [1, 2, 3]
