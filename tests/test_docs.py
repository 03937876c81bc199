import os
from pathlib import Path

from openclaw_cli.errors import EXIT_CODE_DOCS, ExitCode, exit_codes_markdown

ROOT = Path(__file__).resolve().parent.parent


def test_exit_code_doc_is_current() -> None:
    assert (ROOT / "docs" / "exit-codes.md").read_text() == exit_codes_markdown()


def test_every_exit_code_is_documented_and_unique() -> None:
    assert set(EXIT_CODE_DOCS) == set(ExitCode)
    assert len({int(c) for c in ExitCode}) == len(list(ExitCode))


def test_command_reference_is_current() -> None:
    """docs/commands.md is generated from the Typer app: a new command or option must come with
    the regenerated file."""
    from openclaw_cli.cli.reference import REGENERATE, commands_markdown

    current = (ROOT / "docs" / "commands.md").read_text()
    assert current == commands_markdown(), (
        f"docs/commands.md is stale: run `{REGENERATE}` and commit the result"
    )


def test_command_reference_names_every_command_option_and_default() -> None:
    import typer.main

    from openclaw_cli.cli.main import app
    from openclaw_cli.cli.reference import commands_markdown

    text = commands_markdown()
    root = typer.main.get_command(app)
    assert "| `--tail` `<count>` | `80` |" in text and "| `--limit` `<n|all>` |" not in text  # `|` escaped
    assert "| `--limit` `<n\\|all>` |" in text
    for name, group in root.commands.items():
        assert f"## `openclaw {name}`" in text
        for sub in getattr(group, "commands", {}):
            assert f"## `openclaw {name} {sub}`" in text
    for param in root.commands["sessions"].commands["cleanup"].params:
        if not getattr(param, "hidden", False):
            assert f"`{param.opts[0]}`" in text.split("## `openclaw sessions cleanup`")[1].split("## ")[0]


def test_readme_links_the_command_reference() -> None:
    assert "(docs/commands.md)" in (ROOT / "README.md").read_text()


def test_gen_docs_regenerates_both_files(tmp_path) -> None:
    """The one regeneration command writes what the staleness tests compare against."""
    import shutil
    import subprocess
    import sys

    for name in ("scripts", "docs"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / "docs" / "commands.md").write_text("stale\n")
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "gen_docs.py")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "docs" / "commands.md").read_text() == (ROOT / "docs" / "commands.md").read_text()


def test_gen_docs_works_as_the_readme_writes_it_with_a_python_without_the_package(tmp_path) -> None:
    """Issue 29 (first run): `python scripts/gen_docs.py` failed with ModuleNotFoundError when
    `python` is the system one; it now runs itself again with the checkout's .venv."""
    import shutil
    import subprocess
    import sys

    base = getattr(sys, "_base_executable", None)
    probe = subprocess.run([base or "", "-c", "import typer"], capture_output=True) if base else None
    if probe is None or probe.returncode == 0:
        import pytest

        pytest.skip("no Python without typer to try it with")
    for name in ("scripts", "docs"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "docs" / "commands.md").write_text("stale\n")
    proc = subprocess.run(
        [base, "scripts/gen_docs.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "docs" / "commands.md").read_text() == (ROOT / "docs" / "commands.md").read_text()
    # the package importable (PYTHONPATH) but not its dependencies: typer is checked up front too,
    # so it re-runs with .venv instead of failing halfway with ModuleNotFoundError: typer
    (tmp_path / "docs" / "commands.md").write_text("stale\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENCLAW_GEN_DOCS_REEXEC"}
    proc = subprocess.run(
        [base, "scripts/gen_docs.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert (tmp_path / "docs" / "commands.md").read_text() == (ROOT / "docs" / "commands.md").read_text()


def test_the_readmes_first_run_block_works_as_written_with_another_openclaw_on_path(tmp_path) -> None:
    """Issue 29 (first run): the README says how to run the installed `openclaw`; its block runs
    as written in a real bash, and after `source .venv/bin/activate` a bare `openclaw` is ours even
    with another `openclaw` earlier on PATH (as the real OpenClaw's would be)."""
    import re
    import shutil
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(source \.venv/bin/activate.*?)```", text, re.S)
    assert block is not None and "Running the installed `openclaw`" in text
    assert "another" in text.lower() or "real OpenClaw (npm) installs a command named" in text
    for name in ("scripts", "docs"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "openclaw").write_text("#!/bin/sh\necho 'the real OpenClaw'\n")
    (other / "openclaw").chmod(0o755)
    env = {"PATH": f"{other}:/usr/bin:/bin", "HOME": str(tmp_path)}
    before = subprocess.run(
        ["bash", "-c", "openclaw --version"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert before.stdout.strip() == "the real OpenClaw"  # the trap the README warns about
    proc = subprocess.run(
        ["bash", "-euc", block.group(1)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("openclaw-cli ")
    assert (tmp_path / "docs" / "commands.md").read_text() == (ROOT / "docs" / "commands.md").read_text()
