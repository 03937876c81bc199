"""Session keys: parsing, normalisation, classification (compaction-lifecycle §1, maintenance §3)."""

from __future__ import annotations

import json

import pytest
from conftest import OPENCLAW_FIXTURE

from openclaw_cli import keys

UUID = "123e4567-e89b-12d3-a456-426614174000"


# ---- R1.3.1 / R1.3.2 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("agent:main:main", ("main", "main")),
        ("Agent:Main:Telegram:Group:-100ABC", ("main", "Telegram:Group:-100ABC")),
        ("  agent: work :discord:channel:1  ", ("work", "discord:channel:1")),
        ("agent:main:slack:channel:C1:thread:1.2", ("main", "slack:channel:C1:thread:1.2")),
        # EX1.3.d
        ("agent::main", None),
        ("agent:main:", None),
        ("agent:main::x", None),
        ("agent:main", None),
        ("main", None),
        ("cron:job1", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_agent_key(key, expected):
    assert keys.parse_agent_key(key) == expected


@pytest.mark.parametrize(
    ("key", "shape"),
    [
        ("", "missing"),
        ("   ", "missing"),
        (None, "missing"),
        ("agent:main:main", "agent"),
        ("AGENT:x:y", "agent"),
        ("agent::main", "malformed_agent"),
        ("agent:main:", "malformed_agent"),
        ("agent:main::x", "malformed_agent"),
        ("Agent:only", "malformed_agent"),
        ("cron:job1", "legacy_or_alias"),
        ("global", "legacy_or_alias"),
    ],
)
def test_classify_key_shape(key, shape):
    assert keys.classify_key_shape(key) == shape


# ---- R1.3.3 / R1.3.4 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "normalized"),
    [
        ("agent:Main:Telegram:Group:-100ABC", "agent:main:telegram:group:-100abc"),  # EX1.3.a
        ("agent:main:signal:group:AbC=", "agent:main:signal:group:AbC="),  # EX1.3.b
        ("Agent:Main:Signal:Group: AbC= ", "agent:main:signal:group:AbC="),
        ("agent:main:signal:group:AbC=:Thread:XY", "agent:main:signal:group:AbC=:thread:xy"),
        (
            "agent:main:matrix:channel:!Room:Ex.org:thread:$Ev",  # EX1.3.b
            "agent:main:matrix:channel:!Room:Ex.org:thread:$Ev",
        ),
        ("AGENT:MAIN:MATRIX:GROUP:!Room:Ex.org", "agent:main:matrix:group:!Room:Ex.org"),
        ("agent:main:Matrix:Channel:!R:S:Thread:$E", "agent:main:matrix:channel:!R:S:thread:$E"),
        ("agent:main:signal:direct:+ABC", "agent:main:signal:direct:+abc"),  # only groups keep case
        ("  Global ", "global"),
    ],
)
def test_normalize_key(key, normalized):
    assert keys.normalize_key(key) == normalized


@pytest.mark.parametrize(
    ("agent", "request_key", "store_key"),
    [
        ("work", "MAIN", "agent:work:main"),  # EX1.3.e
        ("work", "discord:channel:123", "agent:work:discord:channel:123"),  # EX1.3.e
        ("work", "", "agent:work:main"),
        ("work", None, "agent:work:main"),
        ("work", "Agent:Other:Slack:Channel:C1", "agent:other:slack:channel:c1"),
        ("work", "agent::broken", "agent::broken"),
        ("My Agent!", "Telegram:Direct:42", "agent:my-agent:telegram:direct:42"),
    ],
)
def test_to_agent_store_key(agent, request_key, store_key):
    assert keys.to_agent_store_key(agent, request_key) == store_key


def test_store_key_round_trip_and_main_key():
    assert keys.from_agent_store_key("agent:work:discord:channel:1") == "discord:channel:1"
    assert keys.from_agent_store_key("cron:job") == "cron:job"
    assert keys.main_key("  Work ") == "agent:work:main"
    assert keys.main_key("!!!", "Home") == "agent:main:home"


@pytest.mark.parametrize(
    ("key", "default", "out"),
    [
        ("cron:job1", "main", "agent:main:cron:job1"),
        ("hook:0620F087-7E5F", "work", "agent:work:hook:0620f087-7e5f"),
        ("Cron:Nightly:run:abc", "main", "agent:main:cron:nightly:run:abc"),
        ("agent:main:cron:job1", "main", "agent:main:cron:job1"),
        ("cronjob", "main", "cronjob"),
        ("telegram:direct:1", "main", "telegram:direct:1"),
        ("global", "main", "global"),
    ],
)
def test_canonicalize_bare_key(key, default, out):
    assert keys.canonicalize_bare_key(key, default) == out


# ---- §3.2 synthetic, §3.3 probes, §3.4 cron runs ------------------------------------------------


@pytest.mark.parametrize(
    ("key", "synthetic"),
    [
        ("agent:main:subagent:worker", True),
        ("subagent:worker", True),
        ("agent:main:acp:x", True),
        ("acp:x", True),
        ("agent:main:cron:job", True),
        ("cron:job", True),
        ("agent:main:acp-bridge:session-1", True),
        ("agent:main:hook:abc", True),
        ("agent:main:node:n1", True),
        ("agent:main:heartbeat", True),
        ("agent:main:telegram:direct:1:heartbeat", True),
        ("agent:main:x:heartbeat:y", True),
        ("agent:main:Subagent:CHILD", True),
        (f"agent:main:explicit:model-run-{UUID}", False),  # G1: probes are not synthetic
        ("agent:main:main", False),
        ("agent:main:heartbeats", False),
        ("agent:main:telegram:direct:1", False),
    ],
)
def test_is_synthetic_key(key, synthetic):
    assert keys.is_synthetic_key(key) is synthetic


@pytest.mark.parametrize(
    ("key", "probe"),
    [
        (f"agent:main:explicit:model-run-{UUID}", True),
        (f"agent:Main:Explicit:Model-Run-{UUID.upper()}", True),
        (f"agent:model-run-foo:explicit:model-run-{UUID}", True),
        ("agent:main:explicit:model-run-not-a-uuid", False),
        (f"agent:main:explicit:model-runner-{UUID}", False),
        (f"explicit:model-run-{UUID}", False),
        (f"agent::explicit:model-run-{UUID}", False),
        (f"agent:main:extra:explicit:model-run-{UUID}", False),
        (f"  agent:main:explicit:model-run-{UUID}", False),
        (f"agent:main:explicit:model-run-{UUID}  ", False),
        (None, False),
    ],
)
def test_model_run_probe_pinned_examples(key, probe):
    assert keys.is_model_run_probe_key(key) is probe


def test_cron_run_keys():
    # EX1.3.f
    assert keys.parse_cron_run("agent:main:cron:nightly:run:abc") == ("agent:main:cron:nightly", "abc")
    assert keys.parse_cron_run("agent:main:slack:channel:C1:run:x") is None
    assert keys.is_cron_run_key("agent:main:cron:job:run:123:extra")
    assert keys.is_cron_run_key("Agent:Main:Cron:Job:Run:R1")
    assert not keys.is_cron_run_key("agent:main:cron:job")  # the base job key
    assert not keys.is_cron_run_key("agent:main:cron:job:run:")
    assert not keys.is_cron_run_key("cron:job:run:1")  # bare keys are not agent-scoped
    assert keys.is_cron_key("agent:main:cron:job") and keys.is_cron_key("cron:job")


def test_reset_type():
    assert keys.reset_type("agent:main:telegram:group:-100123:topic:77") == "thread"  # EX1.3.c
    assert keys.reset_type("agent:main:slack:channel:C1:Thread:9") == "thread"
    assert keys.reset_type("agent:main:main", thread_context=True) == "thread"
    assert keys.reset_type("agent:main:telegram:group:1") == "group"
    assert keys.reset_type("agent:main:opaque", chat_type="Channel") == "group"
    assert keys.reset_type("agent:main:main") == "direct"


def test_parse_thread_uses_last_marker():
    assert keys.parse_thread("agent:main:slack:channel:C1:thread:1.2") == (
        "agent:main:slack:channel:C1",
        "1.2",
    )
    assert keys.parse_thread("a:THREAD:x:thread:y") == ("a:THREAD:x", "y")
    assert keys.parse_thread("agent:main:slack:channel:C1:thread:") is None
    assert keys.parse_thread("agent:main:main") is None


# ---- §3.5 durable pointers, §3.6 primary, §10.5 dm scope ---------------------------------------


@pytest.mark.parametrize(
    ("key", "entry"),
    [
        ("agent:main:slack:channel:C123:thread:1710000000.000100", {}),
        ("agent:main:telegram:group:-100123:topic:77", {}),
        ("agent:main:slack:channel:C999", {}),
        ("agent:main:custom:channel:room-one:with:colon", {}),
        ("agent:main:opaque", {"chatType": "channel"}),
        ("agent:main:discord:channel:123456:thread:987654", {}),
        ("agent:main:telegram:direct:42:topic:9", {}),
        ("agent:main:opaque", {"origin": {"chatType": "Thread"}}),
        ("discord:channel:1", {}),  # bare legacy keys are classified on their whole text
    ],
)
def test_durable_external_pointers(key, entry):
    assert keys.is_durable_external_pointer(key, entry)


@pytest.mark.parametrize(
    ("key", "entry"),
    [
        ("agent:main:acp-bridge:session-1", {"chatType": "group"}),
        ("agent:main:subagent:worker", {"chatType": "group"}),
        ("agent:main:cron:job:run:123", {"origin": {"chatType": "group"}}),
        ("agent:main:opaque:topic:om_topic_root:sender:ou_topic_user", {}),
        ("agent:main:telegram:direct:42", {"chatType": "direct"}),
        ("agent:main:main", None),
        ("agent:main:opaque", {"chatType": None, "origin": {"chatType": "direct"}}),
    ],
)
def test_not_durable_external_pointers(key, entry):
    assert not keys.is_durable_external_pointer(key, entry)


def test_chat_type_falls_back_to_origin_only_when_absent():
    assert keys.is_durable_external_pointer("agent:main:x", {"origin": {"chatType": "group"}})
    assert not keys.is_durable_external_pointer(
        "agent:main:x", {"chatType": "direct", "origin": {"chatType": "group"}}
    )


@pytest.mark.parametrize(
    ("key", "primary"),
    [
        ("global", True),
        (" GLOBAL ", True),
        ("agent:main:main", True),
        ("Agent:Work:MAIN", True),
        ("agent:main:main:thread:1", False),
        ("main", False),
        ("agent:main:mainly", False),
    ],
)
def test_primary_keys(key, primary):
    assert keys.is_primary_key(key) is primary


@pytest.mark.parametrize(
    ("key", "candidate"),
    [
        ("agent:main:direct:peer", True),
        ("agent:main:telegram:direct:100001", True),
        ("agent:main:telegram:acct:direct:100001", True),
        ("agent:main:Telegram:DIRECT:X", True),
        ("agent:main:telegram:direct:", False),
        ("agent:main:telegram::direct:1", False),
        ("agent:main:telegram:group:1", False),
        ("agent:main:agent:direct:x", False),  # a nested agent wrapper is never a DM route
        ("agent:main:a:b:c:direct:x", False),
        ("agent:main:main", False),
        ("telegram:direct:1", False),
    ],
)
def test_dm_scope_candidates(key, candidate):
    assert keys.is_dm_scope_retire_candidate(key) is candidate


def test_dm_scope_candidate_respects_target_agent():
    assert keys.is_dm_scope_retire_candidate("agent:Work:direct:x", "work")
    assert not keys.is_dm_scope_retire_candidate("agent:other:direct:x", "work")


# ---- listing kinds and derived flags -------------------------------------------------------------


def test_session_kind_rules():
    assert keys.session_kind("global") == "global"
    assert keys.session_kind("unknown") == "unknown"
    assert keys.session_kind("agent:main:cron:job:run:1", {"spawnedBy": "x"}) == "cron"
    assert keys.session_kind("agent:main:acp:opaque", {"spawnedBy": "agent:main:main"}) == "spawn-child"
    assert keys.session_kind("agent:main:opaque", {"chatType": "channel"}) == "group"
    assert keys.session_kind("agent:main:slack:channel:C1") == "group"
    assert keys.session_kind("agent:main:telegram:direct:1", None) == "direct"


def test_session_kind_matches_real_openclaw_listing():
    """Every row of the real 2026.9.6 listing has the kind we derive from the legacy entry."""
    legacy = json.loads((OPENCLAW_FIXTURE / "legacy-state/agents/main/sessions/sessions.json").read_text())
    listing = json.loads((OPENCLAW_FIXTURE / "outputs/sessions.json").read_text())
    checked = 0
    for row in listing["sessions"]:
        entry = legacy.get(row["key"], {"spawnedBy": row.get("spawnedBy")})
        assert keys.session_kind(row["key"], entry) == row["kind"], row["key"]
        checked += 1
    assert checked == 13


def test_subagent_depth():
    assert keys.subagent_depth("agent:main:main") == 0
    assert keys.subagent_depth("agent:main:subagent:a") == 1
    assert keys.subagent_depth("agent:main:subagent:a:Subagent:b") == 2
    assert keys.subagent_depth(None) == 0


@pytest.mark.parametrize(
    ("entry", "unread"),
    [
        ({"markedUnreadAt": 5}, True),  # EX6.4.c
        ({"lastReadAt": 100, "lastActivityAt": 150}, True),
        ({"createdAt": 100, "lastInteractionAt": 90}, False),
        ({}, False),
        ({"lastReadAt": 100, "createdAt": 10, "lastInteractionAt": 50}, False),  # lastReadAt wins
        ({"createdAt": 100, "lastActivityAt": 101}, True),
        ({"lastInteractionAt": 10**12}, False),  # no baseline: never unread
    ],
)
def test_derived_unread(entry, unread):
    assert keys.derive_row_flags(entry)["unread"] is unread


def test_derived_archived_and_pinned():
    assert keys.derive_row_flags({"archivedAt": 1}) == {"archived": True, "pinned": False, "unread": False}
    assert keys.derive_row_flags({"pinnedAt": 1}, "agent:main:main")["pinned"] is True
    auto_parented = {"pinnedAt": 1, "parentSessionKey": "agent:main:main"}
    assert keys.derive_row_flags(auto_parented, "agent:main:dashboard:x")["pinned"] is True
    # child sessions and sub-agent runs are not pinnable
    assert (
        keys.derive_row_flags({"pinnedAt": 1, "parentSessionKey": "agent:main:dashboard:x"}, "k")["pinned"]
        is False
    )
    assert keys.derive_row_flags({"pinnedAt": 1}, "agent:main:subagent:w")["pinned"] is False
    assert (
        keys.derive_row_flags({"pinnedAt": 1, "spawnedBy": "agent:main:main"}, "agent:main:acp:x")["pinned"]
        is False
    )
    forked = {"pinnedAt": 1, "parentSessionKey": "agent:main:main", "forkedFromParent": True}
    assert keys.derive_row_flags(forked, "agent:main:x")["pinned"] is False
    assert keys.derive_row_flags("not a dict") == {"archived": False, "pinned": False, "unread": False}
