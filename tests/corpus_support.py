"""The hostile-input corpus (tests/corpus/cases.json) and how a case is set up and run.

A case names a hostile input (`setup`: what is done to a small generated state) and a command;
it expects an exit code and a fragment of the output (stdout + stderr, sanitised text as printed).
Setups, applied in this order:

- `imported`: the state is imported into SQLite first (the input then meets the SQLite store);
- `store_hex` / `store_text`: `sessions.json` replaced by these bytes; `store_prefix_hex`: bytes put
  in front of it;
- `entry`: `{"field": name, "literal": raw JSON}` sets a field of the first entry, spliced into the
  file's text (so the literal is exactly what is on disk); `{"key": raw JSON string}` renames the
  first key the same way; `{"drop": name}` removes a field;
- `line`: `{"n": k, "hex"|"text": ...}` replaces line k (1-based) of the main session's transcript;
  `transcript_hex` replaces the whole transcript;
- `config_text` / `config_hex`: `openclaw.json`;
- `db`: a named database file put at the agent's database path (`garbage`, `empty`, `foreign-app`,
  `unrelated-table`, `newer-schema`, `truncated-ours`, `directory`);
- `fs`: a named filesystem shape (`sessions-loop`, `store-dir`, `store-symlink-out`,
  `transcript-symlink-out`, `agents-file`, `store-fifo`, `state-file`, `lock-stale-dead`,
  `lock-garbage`).

`{key}` in a command stands for the main session's key, `{sid}` for its session id, `{state}` for
the state directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "corpus" / "cases.json"
MAIN_KEY = "agent:main:main"
SESSIONS = Path("agents") / "main" / "sessions"
DB = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"


def load_cases() -> list[dict[str, Any]]:
    return json.loads(CASES.read_text())


def _store(state: Path) -> Path:
    return state / SESSIONS / "sessions.json"


def _main_sid(state: Path) -> str:
    if not _store(state).is_file() or _store(state).is_symlink():  # never open a FIFO (it would block)
        raise ValueError("sessions.json is not a regular file")
    return json.loads(_store(state).read_text())[MAIN_KEY]["sessionId"]


def _splice_entry(state: Path, spec: dict[str, Any]) -> None:
    """Edit the first entry of sessions.json textually, so hostile literals land on disk as written."""
    path = _store(state)
    text = path.read_text()
    data = json.loads(text)
    first = next(iter(data))
    start = text.index(json.dumps(first))
    end = text.index("\n  }", start)
    body = text[start:end]
    if "key" in spec:
        body = spec["key"] + body[len(json.dumps(first)) :]
    if "field" in spec:
        name = spec["field"]
        pattern = re.compile(rf'("{re.escape(name)}": )([^\n]*?)(,?)$', re.M)
        if pattern.search(body):
            body = pattern.sub(lambda m: m.group(1) + spec["literal"] + m.group(3), body, count=1)
        else:
            body = body.replace("{\n", "{\n    " + json.dumps(name) + ": " + spec["literal"] + ",\n", 1)
    if "drop" in spec:
        body = re.sub(rf'\n    "{re.escape(spec["drop"])}": [^\n]*?,?(?=\n)', "", body, count=1)
        body = re.sub(r",(\n\s*)$", r"\1", body)
    path.write_text(text[:start] + body + text[end:])


def _set_line(state: Path, spec: dict[str, Any]) -> None:
    path = state / SESSIONS / f"{_main_sid(state)}.jsonl"
    lines = path.read_bytes().split(b"\n")
    data = bytes.fromhex(spec["hex"]) if "hex" in spec else spec["text"].encode("utf-8", "surrogatepass")
    lines[spec["n"] - 1] = data
    path.write_bytes(b"\n".join(lines))


def _write_db(state: Path, kind: str) -> None:
    db = state / DB
    db.parent.mkdir(parents=True, exist_ok=True)
    if db.exists():
        db.unlink()
    if kind == "garbage":
        db.write_bytes(b"this is not a database at all\n" * 20)
    elif kind == "empty":
        db.write_bytes(b"")
    elif kind == "directory":
        db.mkdir()
    elif kind == "truncated-ours":
        src = state.parent / "ours.sqlite"
        db.write_bytes(src.read_bytes()[:4096])
    else:
        conn = sqlite3.connect(db)
        if kind == "foreign-app":
            conn.execute("PRAGMA application_id = 1234")
            conn.execute("CREATE TABLE t(x)")
        elif kind == "unrelated-table":
            conn.execute("CREATE TABLE a(x)")
            conn.execute("INSERT INTO a VALUES (1)")
        elif kind == "newer-schema":
            conn.execute("PRAGMA user_version = 99")
            conn.execute(
                "CREATE TABLE schema_meta(meta_key TEXT PRIMARY KEY, role TEXT, schema_version INTEGER,"
                " agent_id TEXT, app_version TEXT, created_at INTEGER, updated_at INTEGER)"
            )
            conn.execute("INSERT INTO schema_meta VALUES ('primary','agent',99,'main','x',0,0)")
            conn.execute("CREATE TABLE session_entries(session_key TEXT)")
        conn.commit()
        conn.close()


def _fs(state: Path, kind: str) -> None:
    sessions = state / SESSIONS
    outside = state.parent / "outside"
    outside.mkdir(exist_ok=True)
    if kind == "sessions-loop":
        shutil.rmtree(sessions)
        sessions.symlink_to(sessions)  # ELOOP on every path through it
    elif kind == "store-dir":
        _store(state).unlink()
        _store(state).mkdir()
    elif kind == "store-symlink-out":
        target = outside / "sessions.json"
        shutil.move(_store(state), target)
        _store(state).symlink_to(target)
    elif kind == "transcript-symlink-out":
        path = sessions / f"{_main_sid(state)}.jsonl"
        target = outside / path.name
        shutil.move(path, target)
        path.symlink_to(target)
    elif kind == "agents-file":
        shutil.rmtree(state / "agents")
        (state / "agents").write_text("not a directory")
    elif kind == "store-fifo":
        _store(state).unlink()
        os.mkfifo(_store(state))
    elif kind == "lock-stale-dead":
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        lock = sessions / f"{_main_sid(state)}.jsonl.lock"
        lock.write_text(json.dumps({"pid": proc.pid, "createdAt": "2026-01-01T00:00:00.000Z"}))
    elif kind == "lock-garbage":
        lock = sessions / "sessions.json.lock"
        lock.write_bytes(b"\xff\x00garbage")
        os.utime(lock, (1_700_000_000, 1_700_000_000))  # an abandoned one (a fresh one is waited for)
    else:
        raise ValueError(kind)


def prepare(base: Path, dest: Path, setup: dict[str, Any]) -> Path:
    """A copy of the base state (dest/state; dest plays $HOME) with the case's hostile input."""
    shutil.copytree(base.parent, dest, symlinks=True)
    state = dest / "state"
    if setup.get("imported"):
        from typer.testing import CliRunner

        from openclaw_cli.cli.main import app

        result = CliRunner().invoke(
            app, ["doctor", "--session-sqlite", "import", "--session-sqlite-all-agents"], env=env_for(state)
        )
        assert result.exit_code == 0, result.output
    if "store_hex" in setup:
        _store(state).write_bytes(bytes.fromhex(setup["store_hex"]))
    if "store_text" in setup:
        _store(state).write_bytes(setup["store_text"].encode("utf-8", "surrogatepass"))
    if "store_prefix_hex" in setup:
        _store(state).write_bytes(bytes.fromhex(setup["store_prefix_hex"]) + _store(state).read_bytes())
    if "entry" in setup:
        _splice_entry(state, setup["entry"])
    if "line" in setup:
        _set_line(state, setup["line"])
    if "transcript_hex" in setup:
        (state / SESSIONS / f"{_main_sid(state)}.jsonl").write_bytes(bytes.fromhex(setup["transcript_hex"]))
    if "config_text" in setup:
        (state / "openclaw.json").write_bytes(setup["config_text"].encode("utf-8", "surrogatepass"))
    if "config_hex" in setup:
        (state / "openclaw.json").write_bytes(bytes.fromhex(setup["config_hex"]))
    if "db" in setup:
        _write_db(state, setup["db"])
    if "fs" in setup:
        _fs(state, setup["fs"])
    return state


def env_for(state: Path) -> dict[str, str]:
    return {
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "HOME": str(state.parent),
        "OPENCLAW_HOME": str(state.parent),
        "NO_COLOR": "1",
        "OPENCLAW_GATEWAY_PORT": "1",
        "COLUMNS": "200",
    }


def command(case: dict[str, Any], state: Path) -> list[str]:
    key, sid = MAIN_KEY, None
    try:
        sid = str(_main_sid(state))
    except Exception:  # noqa: BLE001 - the case broke sessions.json on purpose
        sid = "unknown"
    return [
        arg.replace("{key}", key).replace("{sid}", sid).replace("{state}", str(state)) for arg in case["cmd"]
    ]


def invoke(args: list[str], state: Path) -> tuple[int, str, str, BaseException | None]:
    """Run the command in-process (CliRunner: the same code path as the CLI, much faster)."""
    from typer.testing import CliRunner

    from openclaw_cli.cli.main import app

    result = CliRunner().invoke(app, args, env=env_for(state))
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.stdout, result.stderr, exc
