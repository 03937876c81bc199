"""The real OpenClaw 2026.9.6 judges our writes to its schema-23 databases (issue 12, spec D21):
after each of our writes on a copy of a database it imported, (a) its `doctor --session-sqlite
inspect` reports no issue, an `ok` integrity check and our entry count, (b) its `sessions --json`
lists exactly the rows we say remain, with the same sessionId/updatedAt/tokens, (c) its Gateway
starts on the database and serves `sessions.list`/`sessions.describe`/`chat.history`; and the same
operation done by its Gateway on a second copy leaves the same rows and events, apart from the
differences docs/decisions.md ("Writing schema-23 databases") lists. Skipped without /tmp/peer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cleanup_support import cli_json, write_config

from tests.openclaw_db_support import (
    DB_REL,
    NO_PEER,
    archive_rows,
    checks,
    event_rows,
    gateway_calls,
    have_peer,
    nodes,
    peer_gateway,
    peer_inspect,
    peer_rows,
)

pytestmark = [pytest.mark.peer, pytest.mark.skipif(not have_peer(), reason=NO_PEER)]
CLEANUP = {"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 500}}}


def _our_rows(state: Path) -> list[tuple]:
    code, doc, err = cli_json("sessions", "--json", "--limit", "all")
    assert code == 0, err
    fields = ("key", "sessionId", "updatedAt", "inputTokens", "outputTokens", "totalTokens")
    return sorted(tuple(r.get(f) for f in fields) for r in doc["sessions"])


def _second_copy(state: Path, tmp_path: Path) -> Path:
    """An untouched copy for the real OpenClaw's own run (root for the peer wrapper)."""
    root = tmp_path / "theirs"
    shutil.copytree(state, root / "home" / ".openclaw")
    return root


def _judge(root: Path, state: Path, entries: int) -> None:
    """(a) and (b) on the state at `root/home/.openclaw` (= `state`)."""
    target = peer_inspect(root)
    assert target["issues"] == [] and target["dbStats"]["integrityCheck"] == "ok"
    assert target["sqliteEntries"] == entries
    assert peer_rows(root) == _our_rows(state)
    assert checks(state / DB_REL) == ("ok", [])


def test_cleanup_enforce_is_judged_by_the_real_openclaw(real_state: Path, tmp_path: Path):
    write_config(real_state, CLEANUP)
    db = real_state / DB_REL
    theirs_root = _second_copy(real_state, tmp_path)
    before, before_nodes = event_rows(db), nodes(db)
    code, doc, err = cli_json("sessions", "cleanup", "--enforce", "--store", str(db), "--json")
    assert code == 0 and doc["applied"], err
    ours = nodes(db)
    _judge(tmp_path, real_state, doc["appliedCount"])
    kept, removed = sorted(ours)[0], sorted(set(before_nodes) - set(ours))[0]
    with peer_gateway(tmp_path) as port:
        listed, described, gone = gateway_calls(port, [
            ("sessions.list", {"limit": 1000}),
            ("sessions.describe", {"key": kept}),
            ("sessions.describe", {"key": removed}),
        ])
    assert listed["ok"] and listed["payload"]["totalCount"] == doc["appliedCount"]
    assert described["payload"]["session"]["sessionId"] == ours[kept][0]
    assert gone["ok"] and gone["payload"]["session"] is None

    # the same operation by the real Gateway on the second copy
    theirs_db = theirs_root / "home" / ".openclaw" / DB_REL
    with peer_gateway(theirs_root) as port:
        [result] = gateway_calls(port, [("sessions.cleanup", {"enforce": True})])
    assert result["ok"], result
    theirs = nodes(theirs_db)
    # 2026.9.6 runs later maintenance rules (D11): it protects direct chats delivered to an external
    # channel and archives stale dashboards instead of pruning them. Everything else agrees.
    assert set(ours) <= set(theirs)
    for key in set(theirs) - set(ours):
        entry = json.loads(theirs[key][1])
        assert ":direct:" in key or (":dashboard:" in key and entry.get("archiveReason") == "stale-dashboard"), key
    ours_events, theirs_events = event_rows(db), event_rows(theirs_db)
    for key, (sid, _) in ours.items():
        assert theirs[key][0] == sid and ours_events.get(sid) == theirs_events.get(sid) == before.get(sid)
    ours_archives, theirs_archives = archive_rows(db), archive_rows(theirs_db)
    import zstandard

    def content(row: dict) -> bytes:
        return zstandard.ZstdDecompressor().decompressobj().decompress(row["archive_blob"])

    both = set(ours_archives) & set(theirs_archives)
    assert both and set(ours_archives) - both <= {theirs[k][0] for k in set(theirs) - set(ours)}
    for sid in both:  # same generation, same content (names differ only by their timestamps)
        assert ours_archives[sid]["generation"] == theirs_archives[sid]["generation"]
        assert content(ours_archives[sid]) == content(theirs_archives[sid])


def test_compaction_writes_are_judged_by_the_real_openclaw(real_state: Path, tmp_path: Path):
    db = real_state / DB_REL
    theirs_root = _second_copy(real_state, tmp_path)
    summary_key, lines_key = "agent:main:main", "agent:main:telegram:group:123"
    code, comp, err = cli_json("compact", summary_key, "--store", str(db), "--json")
    assert code == 0 and comp["compacted"], err
    code, trimmed, err = cli_json("compact", lines_key, "--max-lines", "5", "--store", str(db), "--json")
    assert code == 0 and trimmed["compacted"] and trimmed["kept"] == 5, err
    _judge(tmp_path, real_state, len(nodes(db)))
    with peer_gateway(tmp_path) as port:
        described, history, trimmed_history = gateway_calls(port, [
            ("sessions.describe", {"key": summary_key}),
            ("chat.history", {"sessionKey": summary_key, "limit": 200}),
            ("chat.history", {"sessionKey": lines_key, "limit": 200}),
        ])
    session = described["payload"]["session"]
    assert session["sessionId"] == nodes(db)[summary_key][0] and session["updatedAt"] == comp_updated(db, summary_key)
    assert history["ok"] and trimmed_history["ok"]
    kept_ids = [json.loads(row[1])["id"] for row in event_rows(db)[nodes(db)[lines_key][0]][1:]]
    served = [m["__openclaw"]["id"] for m in trimmed_history["payload"]["messages"]]
    assert served == [i for i in kept_ids if i in served] and served  # the kept lines, in order

    # the same --max-lines by the real Gateway on the second copy: the same events
    theirs_db = theirs_root / "home" / ".openclaw" / DB_REL
    with peer_gateway(theirs_root) as port:
        [result] = gateway_calls(port, [("sessions.compact", {"key": lines_key, "maxLines": 5})])
    assert result["ok"] and result["payload"]["kept"] == 5, result
    sid = nodes(db)[lines_key][0]
    assert nodes(theirs_db)[lines_key][0] == sid
    ours_events = [(r[0], r[1], r[3]) for r in event_rows(db)[sid]]
    theirs_events = [(r[0], r[1], r[3]) for r in event_rows(theirs_db)[sid]]
    assert ours_events == theirs_events  # seq, exact JSON text and byte count


def comp_updated(db: Path, key: str) -> int:
    return json.loads(nodes(db)[key][1])["updatedAt"]


def test_agent_delete_is_judged_by_the_real_openclaw(real_state: Path, tmp_path: Path):
    write_config(real_state, {"agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]}})
    code, doc, err = cli_json("agents", "delete", "main", "--force", "--json")
    assert code == 0 and doc["keptRows"] == 0, err
    target = peer_inspect(tmp_path)
    assert target["issues"] == [] and target["dbStats"]["integrityCheck"] == "ok" and target["sqliteEntries"] == 0
    assert checks(real_state / DB_REL) == ("ok", [])


def _patch_fields(entry: dict) -> dict:
    """What a lifecycle patch decides, timestamps reduced to whether they are set."""
    return {"archived": entry.get("archivedAt") is not None, "archiveReason": entry.get("archiveReason"),
            "pinned": entry.get("pinnedAt") is not None, "label": entry.get("label"),
            "unread": entry.get("markedUnreadAt") is not None, "read": entry.get("lastReadAt") is not None}


def test_lifecycle_writes_are_judged_by_the_real_openclaw(real_state: Path, tmp_path: Path):
    db = real_state / DB_REL
    theirs_root = _second_copy(real_state, tmp_path)
    before = nodes(db)
    keys = sorted(k for k in before if ":direct:" in k and "stale" not in k)
    pinned, archived, unread, reset, deleted = keys[:5]
    store = ("--store", str(db), "--json")
    for args in (("pin", pinned), ("label", pinned, "Quarterly planning"), ("archive", archived),
                 ("mark-unread", unread), ("reset", reset), ("fork", "agent:main:main", "--to", "agent:main:forked"),
                 ("delete", deleted, "--yes")):
        code, doc, err = cli_json("sessions", *args, *store)
        assert code == 0 and doc["ok"], (args, err)
    ours = nodes(db)
    assert set(ours) == set(before) - {deleted} | {"agent:main:forked"}
    target = peer_inspect(tmp_path)
    assert target["issues"] == [] and target["dbStats"]["integrityCheck"] == "ok"
    assert target["sqliteEntries"] == len(ours)
    code, listed, _ = cli_json("sessions", "--json", "--limit", "all", "--all")
    assert code == 0 and sorted(r["key"] for r in listed["sessions"]) == sorted(ours)
    assert checks(db) == ("ok", [])
    with peer_gateway(tmp_path) as port:
        described = {key: r["payload"]["session"] for key, r in zip(
            (pinned, archived, unread, reset, "agent:main:forked", deleted), gateway_calls(port, [
                ("sessions.describe", {"key": key})
                for key in (pinned, archived, unread, reset, "agent:main:forked", deleted)]), strict=True)}
        [listing] = gateway_calls(port, [("sessions.list", {"limit": 1000, "archived": "all"})])
    assert described[pinned]["pinned"] is True and described[pinned]["label"] == "Quarterly planning"
    assert described[archived]["archived"] is True and described[unread]["unread"] is True
    assert described[reset]["sessionId"] == ours[reset][0] != before[reset][0]
    assert described["agent:main:forked"]["sessionId"] == ours["agent:main:forked"][0]
    assert described[deleted] is None
    assert listing["payload"]["totalCount"] == len(ours)

    # the same patches and delete by the real Gateway on the second copy
    theirs_db = theirs_root / "home" / ".openclaw" / DB_REL
    with peer_gateway(theirs_root) as port:
        results = gateway_calls(port, [
            ("sessions.patch", {"key": pinned, "pinned": True}),
            ("sessions.patch", {"key": pinned, "label": "Quarterly planning"}),
            ("sessions.patch", {"key": archived, "archived": True, "expectedSessionId": before[archived][0]}),
            ("sessions.patch", {"key": unread, "unread": True}),
            ("sessions.delete", {"key": deleted}),
        ])
    assert all(r["ok"] for r in results), results
    theirs = nodes(theirs_db)
    for key in (pinned, archived, unread):
        assert _patch_fields(json.loads(ours[key][1])) == _patch_fields(json.loads(theirs[key][1])), key
        assert ours[key][0] == theirs[key][0]
    assert deleted not in theirs
    assert archive_rows(db)[before[deleted][0]]["archive_sha256"]  # ours archived it; so did theirs:
    assert before[deleted][0] in archive_rows(theirs_db)
    untouched = set(before) - {pinned, archived, unread, reset, deleted}
    ours_events, theirs_events = event_rows(db), event_rows(theirs_db)
    for key in untouched:
        sid = before[key][0]
        assert ours_events.get(sid) == theirs_events.get(sid), key
