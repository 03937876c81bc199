"""`openclaw sessions show KEY` (issue 27 §4) on every store kind: the whole stored entry (on schema 24
with the snapshot fields OpenClaw keeps in their own table), flags, derived state, where the
transcript lives and its size, the key's windows; an unknown key is exit 4 in text and JSON."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.storage_support import STORE_KINDS, cli, cli_json, make_state

KEY = "agent:main:cron:job1"
STORE = {
    "legacy": ("legacy", None),
    "sqlite": ("sqlite", None),
    "schema23": ("openclaw-sqlite", "openclaw 23"),
    "schema24": ("openclaw-sqlite", "openclaw 24"),
}


def _stored(key: str) -> tuple[dict, bytes]:
    """(the entry, the transcript) as the store hands them out, read in-process."""
    from openclaw_cli.paths import resolve_paths
    from openclaw_cli.store.detect import open_agent_store

    with open_agent_store(resolve_paths(), "main", read_only=True) as store:
        entry = store.get_entry(key)
        assert entry is not None, key
        sink = io.BytesIO()
        store.export_transcript(entry["sessionId"], sink, entry=entry)
        return entry, sink.getvalue()


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_show_names_the_entry_its_transcript_and_windows(kind: str, state_dir: Path) -> None:
    make_state(kind, state_dir)
    entry, transcript = _stored(KEY)
    code, doc, err = cli_json("sessions", "show", KEY)
    assert code == 0, err
    assert doc["key"] == KEY and doc["agentId"] == "main"
    store_kind, schema = STORE[kind]
    assert doc["store"]["kind"] == store_kind
    if schema is not None:
        assert doc["store"]["schema"] == schema
    assert doc["entry"] == entry
    assert doc["derived"]["kind"] == "cron" and doc["derived"]["archived"] is False
    shown = doc["transcript"]
    assert shown["sessionId"] == entry["sessionId"]
    assert shown["events"] == transcript.count(b"\n") > 0
    assert shown["bytes"] == len(transcript) - transcript.count(b"\n")
    if kind == "legacy":
        assert Path(shown["location"]).read_bytes() == transcript
    else:
        assert shown["location"].startswith("sqlite:")
    assert entry["sessionId"] in {w["sessionId"] for w in doc["windows"]} or kind == "legacy"
    code, out, _ = cli("sessions", "show", KEY)
    assert code == 0 and KEY in out and entry["sessionId"] in out
    code, doc, _ = cli_json("sessions", "show", "agent:main:nobody:here")
    assert code == 4 and doc["ok"] is False
    code, _, err = cli("sessions", "show", "agent:main:nobody:here")
    assert code == 4 and "agent:main:nobody:here" in err


def test_schema24_show_has_the_snapshot_fields(state_dir: Path) -> None:
    """On schema 24 the snapshot fields live in `session_entry_snapshots`; `show` puts them back into
    the entry, as OpenClaw's reader does (the fixture's migrated database, four entries with them)."""
    from tests.schema24_support import INLINE_KEYS, migrated_state, snapshot_rows, snapshot_values

    db, _ = migrated_state(state_dir)
    stored = snapshot_rows(db)
    for key in INLINE_KEYS:
        assert stored.get(key), f"the migration moved {key}'s snapshot fields into their table"
        code, doc, err = cli_json("sessions", "show", key)
        assert code == 0, err
        wanted = snapshot_values(key)
        if key.endswith("100001"):
            del wanted["sessionDiffBaseline"]
        for field, value in wanted.items():
            assert doc["entry"][field] == value, (key, field)
