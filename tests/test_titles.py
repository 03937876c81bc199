"""Session titles as the real Gateway derives them (issue 22 §5, `ops/titles.py`), and the
Gateway row's controlOwnerSessionKey; the peer comparison is test_listing_peer.py."""

from __future__ import annotations

import json

from cleanup_support import make_sqlite, now_ms, transcript_lines

from openclaw_cli.ops.titles import goal_title


def test_goal_title_vectors() -> None:
    assert goal_title("hello there. fix the login bug please! thanks") == "Fix the login bug please!"
    assert goal_title("  plain   words  ") == "Plain words"
    assert goal_title("/compact now") is None
    assert goal_title("<environment_context> cwd=/x") is None
    assert goal_title("") is None and goal_title(None) is None
    long = "Turn 1: legacy token user delta alpha budget reply context goal summary"
    title = goal_title(long)
    assert title == "Turn 1: legacy token user delta alpha budget reply context…" and len(title) <= 60
    assert goal_title("x" * 80) == "X" + "x" * 58 + "…"  # sentence case; no space to cut at


def test_gateway_rows_take_the_first_user_messages_title(state_dir) -> None:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call
    from openclaw_cli.paths import resolve_paths

    now = now_ms()
    rows = {
        "agent:main:main": {"sessionId": "s1", "updatedAt": now},
        "agent:main:labelled": {"sessionId": "s2", "updatedAt": now - 1, "label": "Mine"},
        "agent:main:subagent:k": {"sessionId": "s3", "updatedAt": now - 2, "spawnedBy": "agent:main:main"},
    }
    make_sqlite(state_dir, rows)
    ctx = Context.load(resolve_paths())
    listed = {r["key"]: r for r in call(ctx, "sessions.list", {"includeDerivedTitles": True})["sessions"]}
    first = json.loads(transcript_lines("s1")[1])["message"]["content"][0]["text"]
    assert listed["agent:main:main"]["displayName"] == goal_title(first)
    assert listed["agent:main:main"]["derivedTitle"] == goal_title(first)
    assert (
        listed["agent:main:labelled"]["displayName"]
        == listed["agent:main:labelled"]["derivedTitle"]
        == "Mine"
    )
    sub = listed["agent:main:subagent:k"]
    assert sub["spawnedBy"] == sub["controlOwnerSessionKey"] == "agent:main:main"
    assert "controlOwnerSessionKey" not in listed["agent:main:main"]
    plain = call(ctx, "sessions.list", {})["sessions"]
    assert not any("derivedTitle" in r for r in plain)
