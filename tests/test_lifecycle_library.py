"""The pure lifecycle rules (`openclaw_cli.lifecycle`): freshness (compaction-lifecycle.md §3.5,
EX3.5.*), one inbound turn as `initSessionState` decides it (§3.2, EX3.6.*), the rows a rollover
or reset writes, the fork plan (§3.7, EX3.7.*) and the key check."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from openclaw_cli.errors import UsageError
from openclaw_cli.lifecycle import check_session_key, reset_entry
from tests.lifecycle_reference import (
    InboundTurn,
    evaluate_freshness,
    match_reset_trigger,
    resolve_session,
    rollover_entry,
)

TZ = ZoneInfo("Europe/Berlin")  # a zone with DST: boundaries are local wall-clock times
DAILY = {"mode": "daily", "atHour": 4}


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=TZ).timestamp() * 1000)


def test_daily_examples():
    # EX3.5.a: started before today's 04:00, now after it -> stale (daily)
    f = evaluate_freshness(
        {"sessionStartedAt": ms("2026-01-18T03:00"), "updatedAt": ms("2026-01-18T04:59")},
        DAILY,
        ms("2026-01-18T05:00"),
        tz=TZ,
    )
    assert (f.fresh, f.stale_reason, f.daily_reset_at) == (False, "daily", ms("2026-01-18T04:00"))
    # EX3.5.b: the boundary before 04:00 is yesterday's
    f = evaluate_freshness(
        {"sessionStartedAt": ms("2026-01-18T04:30"), "updatedAt": ms("2026-01-18T04:30")},
        DAILY,
        ms("2026-01-19T03:59"),
        tz=TZ,
    )
    assert f.fresh and f.daily_reset_at == ms("2026-01-18T04:00")


def test_idle_ignores_updated_at():
    now = ms("2026-01-18T12:00")
    # EX3.5.c: a heartbeat bumped updatedAt; lastInteractionAt decides
    f = evaluate_freshness(
        {"updatedAt": now, "sessionStartedAt": now - 3_600_000, "lastInteractionAt": now - 31 * 60_000},
        {"mode": "idle", "idleMinutes": 30},
        now,
        tz=TZ,
    )
    assert (f.fresh, f.stale_reason) == (False, "idle")
    f = evaluate_freshness(
        {"updatedAt": now, "lastInteractionAt": now - 29 * 60_000},
        {"mode": "idle", "idleMinutes": 30},
        now,
        tz=TZ,
    )
    assert f.fresh


def test_policies_from_config():
    from openclaw_cli.config import reset_settings
    from openclaw_cli.config.loader import validate_config

    def cfg(session: dict):
        return validate_config({"session": session}, Path("openclaw.json"))

    now = ms("2026-01-18T12:00")
    # EX3.5.d: legacy session.idleMinutes -> idle mode; only updatedAt known, a day old
    policy = reset_settings(cfg({"idleMinutes": 30}))
    assert (policy.mode, policy.idle_minutes, policy.configured) == ("idle", 30, True)
    f = evaluate_freshness({"updatedAt": now - 86_400_000}, policy, now, tz=TZ)
    assert (f.fresh, f.stale_reason) == (False, "idle")
    # EX3.5.e: idleMinutes without mode -> daily + idle
    policy = reset_settings(cfg({"reset": {"idleMinutes": 30}}))
    assert (policy.mode, policy.idle_minutes) == ("daily", 30)
    # EX3.5.f / g: type and channel overrides
    by_type = cfg({"resetByType": {"group": {"mode": "idle", "idleMinutes": 30}}})
    assert (
        reset_settings(by_type, "group").mode == "idle" and reset_settings(by_type, "direct").mode == "daily"
    )
    by_channel = cfg({"resetByChannel": {"discord": {"mode": "daily", "atHour": 6}}})
    assert reset_settings(by_channel, "group", "discord").at_hour == 6


def test_both_boundaries_the_earlier_wins():
    # EX3.5.h: daily boundary 04:00, idle expiry 04:10 -> daily
    entry = {
        "sessionStartedAt": ms("2026-01-18T03:00"),
        "lastInteractionAt": ms("2026-01-18T03:40"),
        "updatedAt": ms("2026-01-18T03:40"),
    }
    f = evaluate_freshness(
        entry, {"mode": "daily", "atHour": 4, "idleMinutes": 30}, ms("2026-01-18T05:00"), tz=TZ
    )
    assert f.stale_reason == "daily" and f.idle_expires_at == ms("2026-01-18T04:10")
    entry["sessionStartedAt"] = ms("2026-01-18T04:01")  # only idle passed
    entry["lastInteractionAt"] = ms("2026-01-18T04:05")
    f = evaluate_freshness(
        entry, {"mode": "daily", "atHour": 4, "idleMinutes": 30}, ms("2026-01-18T05:00"), tz=TZ
    )
    assert f.stale_reason == "idle"


def test_future_and_bad_timestamps_are_ignored():
    now = ms("2026-01-18T05:00")
    # EX3.5.i: a future sessionStartedAt falls back to updatedAt
    f = evaluate_freshness(
        {"sessionStartedAt": now + 86_400_000, "updatedAt": ms("2026-01-18T04:30")}, DAILY, now, tz=TZ
    )
    assert f.fresh
    f = evaluate_freshness({"sessionStartedAt": "soon", "updatedAt": -5}, DAILY, now, tz=TZ)
    assert not f.fresh and f.stale_reason == "daily"
    assert evaluate_freshness({}, {"mode": "none"}, now).fresh
    assert evaluate_freshness({}, {"mode": "manual"}, now).fresh


def test_daily_boundary_across_a_dst_change():
    # 2026-03-29 is the spring-forward day in Berlin: the boundary is still 04:00 local
    f = evaluate_freshness({"sessionStartedAt": ms("2026-03-29T03:59")}, DAILY, ms("2026-03-29T04:30"), tz=TZ)
    assert not f.fresh and f.daily_reset_at == ms("2026-03-29T04:00")


# ---- one inbound turn ------------------------------------------------------------------------------------

KEY = "agent:main:main"
NOW = ms("2026-01-18T09:00")


def fresh_entry(**extra) -> dict:
    return {
        "sessionId": "S",
        "updatedAt": NOW - 60_000,
        "sessionStartedAt": NOW - 3_600_000,
        "lastInteractionAt": NOW - 60_000,
        "compactionCount": 2,
        "totalTokens": 5000,
        **extra,
    }


def resolve(entry, body="hello", **turn):
    return resolve_session(
        KEY, NOW, entry=entry, turn=InboundTurn(body=body, **turn), policy=DAILY, new_id=lambda: "S2", tz=TZ
    )


def test_ordinary_turn_reuses_a_fresh_session():
    # EX3.6.a
    r = resolve(fresh_entry())
    assert (r.session_id, r.is_new_session, r.reused_because) == ("S", False, "fresh")
    assert r.entry["lastInteractionAt"] == NOW and r.entry["updatedAt"] == NOW
    assert r.entry["sessionStartedAt"] == NOW - 3_600_000 and r.previous_entry is None


def test_new_and_reset_triggers_roll_over():
    # EX3.6.b
    r = resolve(fresh_entry(label="Plan", thinkingLevel="high"), body="/new")
    assert (r.session_id, r.is_new_session, r.reset_triggered, r.body_stripped, r.end_reason) == (
        "S2",
        True,
        True,
        "",
        "new",
    )
    assert (
        r.entry["compactionCount"] == 0
        and r.entry["totalTokens"] == 0
        and r.entry["totalTokensFresh"] is True
    )
    assert r.entry["label"] == "Plan" and r.entry["thinkingLevel"] == "high"  # explicit: label carried
    assert r.previous_entry["sessionId"] == "S" and r.entry["usageFamilySessionIds"] == ["S", "S2"]
    # EX3.6.c: payload kept with its case
    r = resolve(fresh_entry(), body="/reset Summarize The Plan")
    assert (r.end_reason, r.body_stripped) == ("reset", "Summarize The Plan")
    # R3.6.2
    assert match_reset_trigger("/NEW")[0] == "/new" and match_reset_trigger("/New hello")[1] == "hello"
    assert match_reset_trigger("/newfoo") == (None, None, False)
    assert match_reset_trigger("[Dec 4 17:35] /new")[0] == "/new"


def test_system_events_never_roll_over():
    # EX3.6.d: a heartbeat on a stale entry reuses it and keeps lastInteractionAt
    stale = fresh_entry(sessionStartedAt=NOW - 86_400_000, lastInteractionAt=NOW - 80_000_000)
    r = resolve(stale, body="/new", provider="heartbeat")
    assert (r.session_id, r.is_new_session, r.reused_because, r.system_event) == (
        "S",
        False,
        "system-event",
        True,
    )
    assert r.entry["lastInteractionAt"] == NOW - 80_000_000


def test_implicit_rollover_carries_choices_not_label():
    # EX3.6.e
    stale = fresh_entry(
        sessionStartedAt=NOW - 86_400_000,
        label="Plan",
        thinkingLevel="high",
        modelOverride="gpt-x",
        modelOverrideSource="user",
        authProfileOverride="a",
        authProfileOverrideSource="auto",
    )
    r = resolve(stale)
    assert (r.session_id, r.end_reason) == ("S2", "daily")
    assert r.entry["modelOverride"] == "gpt-x" and r.entry["thinkingLevel"] == "high"
    assert "label" not in r.entry and "authProfileOverride" not in r.entry
    fallback = fresh_entry(
        sessionStartedAt=NOW - 86_400_000, modelOverride="cheap", modelOverrideSource="auto"
    )
    assert "modelOverride" not in resolve(fallback).entry


def test_resume_active_run_terminal_and_soft_reset():
    stale = fresh_entry(sessionStartedAt=NOW - 86_400_000)
    # EX3.6.g: one-shot resume of the requested session
    assert resolve(stale, requested_session_id="S", resume_requested=True).reused_because == "resume"
    assert resolve(stale, requested_session_id="S").is_new_session
    # EX3.6.h: deferred rollover under an active run
    assert resolve(stale, active_run_session_id="S").reused_because == "active-run"
    # EX3.6.i: terminal recovery clears the run state
    r = resolve(fresh_entry(status="failed", startedAt=1, endedAt=2, runtimeMs=1, abortedLastRun=True))
    assert r.reused_because == "terminal-recovery" and not {"status", "startedAt", "abortedLastRun"} & set(
        r.entry
    )
    # EX3.6.j: /reset soft keeps the session
    r = resolve(stale, body="/reset soft")
    assert (r.session_id, r.soft_reset, r.reused_because) == ("S", True, "soft-reset")
    # R3.6.1: an unauthorised /new is an ordinary message
    r = resolve(fresh_entry(), body="/new", authorized=False)
    assert not r.reset_triggered and r.session_id == "S" and r.body_stripped == "/new"


def test_new_key_and_parent_fork():
    r = resolve(None, parent_session_key="agent:main:telegram:group:1", chat_type="group")
    assert r.is_new_session and r.previous_entry is None and r.end_reason is None
    assert r.entry["chatType"] == "group" and r.fork_from_parent == "agent:main:telegram:group:1"
    assert resolve(fresh_entry(forkedFromParent=True), parent_session_key="x").fork_from_parent is None


def test_policy_callable_gets_the_reset_type_and_channel():
    seen = []

    def policy(kind, channel):
        seen.append((kind, channel))
        return {"mode": "idle", "idleMinutes": 1}

    resolve_session(
        "agent:main:discord:group:9",
        NOW,
        entry=fresh_entry(),
        policy=policy,
        turn=InboundTurn(channel="discord"),
        new_id=lambda: "S2",
    )
    assert seen == [("group", "discord")]


def test_reset_entry_keeps_the_conversation_and_clears_the_run():
    old = {
        "sessionId": "S",
        "updatedAt": 1,
        "label": "L",
        "pinnedAt": 5,
        "chatType": "group",
        "groupId": "g",
        "lastChannel": "telegram",
        "model": "m",
        "modelProvider": "p",
        "contextTokens": 9,
        "compactionCount": 3,
        "sessionFile": "S.jsonl",
        "compactionCheckpoints": [],
        "cliSessionIds": {"x": "y"},
        "custom": {"a": 1},
        "lastInteractionAt": 4,
        "status": "done",
    }
    new = reset_entry(old, session_key=KEY, new_session_id="S2", now_ms=NOW)
    assert new["sessionId"] == "S2" and new["sessionStartedAt"] == NOW and new["lifecycleRevision"]
    for kept in ("label", "pinnedAt", "chatType", "groupId", "lastChannel", "custom"):
        assert new[kept] == old[kept]
    for dropped in (
        "model",
        "modelProvider",
        "contextTokens",
        "sessionFile",
        "compactionCheckpoints",
        "cliSessionIds",
        "lastInteractionAt",
        "status",
    ):
        assert dropped not in new
    assert (new["compactionCount"], new["totalTokens"], new["systemSent"]) == (0, 0, False)
    implicit = rollover_entry(old, session_key=KEY, new_session_id="S3", now_ms=NOW, explicit=False)
    assert "label" not in implicit and "groupId" not in implicit


# ---- fork plan -----------------------------------------------------------------------------------------------


def _lines(objs):
    from openclaw_cli.store.base import TranscriptLine

    return [
        TranscriptLine(seq=i, raw=json.dumps(o, separators=(",", ":")), obj=o) for i, o in enumerate(objs)
    ]


def test_fork_plan_cap_and_chain():
    from openclaw_cli.store.fork import plan_fork

    branch = _lines(
        [
            {"type": "compaction", "id": "c", "parentId": "zz", "summary": "s", "firstKeptEntryId": "u"},
            {"type": "message", "id": "u", "parentId": "c", "message": {"role": "user", "content": "hi"}},
            {
                "type": "message",
                "id": "a",
                "parentId": "u",
                "message": {"role": "assistant", "content": [], "usage": {"totalTokens": 40_000}},
            },
        ]
    )
    plan = plan_fork(
        {"totalTokens": 1000},
        {"version": 3},
        branch,
        child_session_id="C",
        timestamp="t",
        cwd="/w",
        parent_ref="/p.jsonl",
        max_tokens=100_000,
    )
    assert not plan.isolated and plan.parent_tokens == 40_000 and plan.copied_entries == 3
    objs = [json.loads(x) for x in plan.lines]
    assert objs[0] == {
        "type": "session",
        "version": 3,
        "id": "C",
        "timestamp": "t",
        "cwd": "/w",
        "parentSession": "/p.jsonl",
    }
    assert [o.get("parentId") for o in objs[1:]] == [None, "c", "u"]  # re-rooted, then the lines as they were
    assert plan.lines[2] == branch[1].raw
    # EX3.7.a: a fresh row total above the cap -> isolated
    big = plan_fork(
        {"totalTokens": 120_000, "totalTokensFresh": True},
        None,
        branch,
        child_session_id="C",
        timestamp="t",
        cwd="/w",
        parent_ref=None,
        max_tokens=100_000,
    )
    assert big.isolated and len(big.lines) == 1 and "(120000/100000 tokens)" in big.warning
    # a stale row total does not count
    assert not plan_fork(
        {"totalTokens": 120_000, "totalTokensFresh": False},
        None,
        branch,
        child_session_id="C",
        timestamp="t",
        cwd="/w",
        parent_ref=None,
        max_tokens=100_000,
    ).isolated


@pytest.mark.parametrize("key", ["", "   ", "a\x00b", "agent:main:\x1b[2J", "x" * 2000, "a\u2028b"])
def test_check_session_key_refuses(key):
    with pytest.raises(UsageError):
        check_session_key(key)


@pytest.mark.parametrize("key", ["../x", "agent:main:../x", "agent::x", "agent:main:a/b", "agent:main:a::b"])
def test_new_keys_refuse_path_like_segments(key):
    assert check_session_key(key) == key  # a lookup key: just not found
    with pytest.raises(UsageError):
        check_session_key(key, new=True)
