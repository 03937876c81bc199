from pathlib import Path

from openclaw_cli.errors import EXIT_CODE_DOCS, ExitCode, exit_codes_markdown

ROOT = Path(__file__).resolve().parent.parent


def test_exit_code_doc_is_current() -> None:
    assert (ROOT / "docs" / "exit-codes.md").read_text() == exit_codes_markdown()


def test_every_exit_code_is_documented_and_unique() -> None:
    assert set(EXIT_CODE_DOCS) == set(ExitCode)
    assert len({int(c) for c in ExitCode}) == len(list(ExitCode))
