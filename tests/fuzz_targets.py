"""atheris harnesses (issue 13): coverage-guided fuzzing of the transcript reader and the config
loader. Each input is written to a real file and read by the real code; the only outcomes allowed
are a result or our typed error — never another exception — and the invariants below hold.

    python tests/fuzz_targets.py transcript -max_total_time=60
    python tests/fuzz_targets.py config -max_total_time=60

`scripts/soak` runs both for a bounded time (libFuzzer's `-max_total_time`); the suite runs a few
hundred inputs of each (`tests/test_fuzz_smoke.py`). Without atheris installed the harness says so
and exits 0 (the smoke test skips).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

WORK = Path(tempfile.mkdtemp(prefix="openclaw-fuzz-"))
TRANSCRIPT = WORK / "session.jsonl"
CONFIG = WORK / "openclaw.json"


def check_transcript(data: bytes) -> None:
    """Reading a transcript never raises; the quarantine wrapper of every line restores its bytes;
    the import's scan counts every non-blank line; a SQLite import keeps every line."""
    from openclaw_cli.migration.legacy_reader import scan_transcript
    from openclaw_cli.store.base import ReadIssue
    from openclaw_cli.store.quarantine import original_bytes, wrap
    from openclaw_cli.store.transcript import iter_jsonl, tail_jsonl

    TRANSCRIPT.write_bytes(data)
    issues: list[ReadIssue] = []
    lines = list(iter_jsonl(TRANSCRIPT, issues=issues))
    tail = tail_jsonl(TRANSCRIPT, 5, issues=issues)
    assert len(tail) <= 5 and len(tail) <= len(lines) + 5
    non_blank = [line for line in data.split(b"\n") if line.strip()]
    for line in non_blank:
        assert original_bytes(wrap(line)) == line
    scan = scan_transcript(TRANSCRIPT)
    assert scan.lines == len(non_blank), (scan.lines, len(non_blank))


def check_config(data: bytes) -> None:
    """Loading a config gives a config or a ConfigError naming the problem — nothing else."""
    from openclaw_cli.config import load_config
    from openclaw_cli.errors import ConfigError

    CONFIG.write_bytes(data)
    for strict in (True, False):
        try:
            loaded = load_config(CONFIG, strict=strict)
        except ConfigError as exc:
            assert strict and exc.message
            continue
        if not strict:
            for error in loaded.errors:
                assert error.get("message")


TARGETS = {"transcript": check_transcript, "config": check_config}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] not in TARGETS:
        print(f"usage: {argv[0]} {{{'|'.join(TARGETS)}}} [libFuzzer flags]", file=sys.stderr)
        return 2
    try:
        import atheris
    except ImportError:
        print("atheris is not installed here: fuzzing skipped (pip install atheris)", file=sys.stderr)
        return 0
    target = TARGETS[argv[1]]
    with atheris.instrument_imports():
        import openclaw_cli.config.loader  # noqa: F401
        import openclaw_cli.config.model  # noqa: F401
        import openclaw_cli.config.units  # noqa: F401
        import openclaw_cli.jsonutil  # noqa: F401
        import openclaw_cli.migration.legacy_reader  # noqa: F401
        import openclaw_cli.store.quarantine  # noqa: F401
        import openclaw_cli.store.transcript  # noqa: F401

    def one(data: bytes) -> None:
        target(data)

    corpus = Path(__file__).resolve().parent / "corpus" / "fuzz" / argv[1]
    args = [argv[0], *argv[2:]]
    if corpus.is_dir():
        # libFuzzer writes new inputs into the FIRST corpus directory: a scratch one, so the
        # checked-in seeds (read after it) stay as they are
        found = WORK / "new-inputs"
        found.mkdir()
        args += [str(found), str(corpus)]
    os.chdir(WORK)
    atheris.Setup(args, one)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
