"""Helpers for the cleanup / agents-delete tests: build legacy and SQLite stores, run the cleanup
service in-process or the CLI as a subprocess, fingerprint directories and archives."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from openclaw_cli.store.archives import list_archives, read_archive_bytes

DAY = 86_400_000
HOUR = 3_600_000


def now_ms() -> int:
    return int(time.time() * 1000)


def write_config(state: Path, config: dict[str, Any]) -> None:
    (state / "openclaw.json").write_text(json.dumps(config))


def maintenance_config(state: Path, **maintenance: Any) -> None:
    extra = maintenance.pop("_extra", {})
    config = {"session": {"maintenance": maintenance, **extra.pop("session", {})}, **extra}
    write_config(state, config)


def sessions_dir(state: Path, agent: str = "main") -> Path:
    return state / "agents" / agent / "sessions"


def db_path(state: Path, agent: str = "main") -> Path:
    return state / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def transcript_lines(sid: str, turns: int = 2, *, ts: str = "2026-11-01T00:00:00.000Z") -> list[str]:
    lines = [json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": "/w"})]
    parent = None
    for i in range(turns):
        for role in ("user", "assistant"):
            eid = hashlib.sha1(f"{sid}{i}{role}".encode()).hexdigest()[:8]
            lines.append(
                json.dumps(
                    {
                        "type": "message",
                        "id": eid,
                        "parentId": parent,
                        "timestamp": ts,
                        "message": {
                            "role": role,
                            "content": [{"type": "text", "text": f"{role} {i} of {sid}"}],
                        },
                    }
                )
            )
            parent = eid
    return lines


def entry(sid: str, updated_at: float | None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"sessionId": sid}
    if updated_at is not None:
        out["updatedAt"] = int(updated_at)
    out.update(extra)
    return out


def make_legacy(
    state: Path,
    entries: dict[str, dict[str, Any]],
    *,
    agent: str = "main",
    turns: int = 2,
    transcripts: dict[str, list[str]] | None = None,
    skip: set[str] = frozenset(),
) -> Path:
    """sessions.json + one transcript per distinct sessionId (unless in `skip`)."""
    root = sessions_dir(state, agent)
    root.mkdir(parents=True, exist_ok=True)
    (root / "sessions.json").write_text(json.dumps(entries, indent=2))
    written = set()
    for e in entries.values():
        sid = e.get("sessionId") if isinstance(e, dict) else None
        if not isinstance(sid, str) or sid in written or sid in skip or "/" in sid or sid.startswith("."):
            continue
        written.add(sid)
        lines = (transcripts or {}).get(sid) or transcript_lines(sid, turns)
        (root / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def make_sqlite(
    state: Path,
    entries: dict[str, dict[str, Any]],
    *,
    agent: str = "main",
    turns: int = 2,
    skip: set[str] = frozenset(),
) -> Path:
    from openclaw_cli.store.sqlite.store import SqliteStore

    path = db_path(state, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    with SqliteStore(path, agent, create=True) as store:
        store.upsert_entries(entries)
        done = set()
        for key, e in entries.items():
            sid = e.get("sessionId")
            if sid in done or sid in skip:
                continue
            done.add(sid)
            store.append_events(sid, transcript_lines(sid, turns)[1:], session_key=key)
    return path


def tree_digest(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under `root` (symlinks as their target text)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def archive_map(directory: Path) -> dict[str, list[str]]:
    """archive base (`<sid>.jsonl`, …) -> sha256 of each archive's decompressed content."""
    out: dict[str, list[str]] = {}
    for archive in list_archives(directory):
        if archive.reason != "deleted":
            continue
        base = archive.path.name.split(".deleted.", 1)[0]
        out.setdefault(base, []).append(sha(read_archive_bytes(archive.path)))
    return out


def sqlite_transcript_bytes(state: Path, sid: str, agent: str = "main") -> bytes:
    import io

    from openclaw_cli.store.sqlite.store import SqliteStore

    with SqliteStore(db_path(state, agent), agent, read_only=True) as store:
        buf = io.BytesIO()
        store.export_transcript(sid, buf)
        return buf.getvalue()


def service(*, now_ms: int | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run the cleanup operation in-process, through the method table the Gateway serves
    (`dry_run=True` -> `{"dryRun": true}`: the local-only extension of the params)."""
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    def camel(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(part.title() for part in rest)

    clock = {} if now_ms is None else {"clock": lambda: now_ms}
    return call(
        Context.load(resolve_paths(), **clock), "sessions.cleanup", {camel(k): v for k, v in kwargs.items()}
    )


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    return run_cli(*args, env=env, timeout=timeout)


def cli_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, Any, str]:
    proc = run_cli(*args, env=env)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        doc = proc.stdout
    return proc.returncode, doc, proc.stderr


def load_store(state: Path, agent: str = "main") -> dict[str, Any]:
    """Entries of the agent's store as the tool sees them (SQLite when present, else legacy)."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    with open_agent_store(resolve_paths(), agent, read_only=True) as store:
        return store.load_entries()


@pytest.fixture
def release_2026_7(monkeypatch: pytest.MonkeyPatch) -> None:
    """Select the 2026.7 behaviour release (G1: stale and capped rows deleted, maxEntries 500, a
    2 GiB logical budget) for tests written against it: since issue 22 a store with no other
    signal follows the newest release (D23). Subprocesses inherit it."""
    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.7")


def sessions_dir_of_every_kind(root: Path, cold: str) -> None:
    """A sessions dir with one file of each kind the sweep and the disk budget tell apart (kept,
    archived, leftovers, a link, a subdirectory, prompt blobs) and `cold` as none, a directory, a
    link to itself or a link to the blobs: the measures' tests compare two ways of listing it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.jsonl").write_bytes(b"x" * 1000)
    (root / "b.jsonl.deleted.2026-01-01T00-00-00.000Z").write_bytes(b"y" * 300)
    (root / "c.jsonl.migrated").write_bytes(b"z" * 5000)  # a migration leftover: neither figure
    (root / "d.jsonl.pre-doctor-branch-repair-2026-01-01T00-00-00-000Z.bak").write_bytes(b"w" * 7000)
    (root / "link.jsonl").symlink_to(root / "a.jsonl")
    (root / "sub").mkdir()
    (root / "sub" / "e.jsonl").write_bytes(b"v" * 900)
    blobs = root / "skills-prompts" / "sha256" / "ab"
    blobs.mkdir(parents=True)
    (blobs / ("ab" + "0" * 62 + ".txt")).write_bytes(b"p" * 77)
    (blobs / "not-a-blob.txt").write_bytes(b"q" * 11)
    if cold == "dir":
        (root / "cold").mkdir()
        (root / "cold" / "f.jsonl").write_bytes(b"u" * 400)
    elif cold == "link-to-self":
        (root / "cold").symlink_to(".")
    elif cold == "link-to-blobs":  # one directory seen by both figures under two names
        (root / "cold").symlink_to(blobs)
