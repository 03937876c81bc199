"""Cleanup reports (maintenance.md §10.8, fixture cleanup-dry-run.json/.txt): the JSON summary
(`maintenance.report`) and the text (`cli.render_cleanup`, fed the plain data of `ops.cleanup`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from conftest import NOW_MS, OPENCLAW_FIXTURE

from openclaw_cli.cli.cells import format_time_ago, split_graphemes, truncate_key
from openclaw_cli.cli.render_cleanup import (
    TABLE_HEADERS,
    ActionRow,
    display_model,
    label_summaries,
    parent_option_rejection,
    render_apply_text,
    render_dry_run_text,
    render_dry_run_texts,
    render_table,
    session_flags,
)
from openclaw_cli.cli.render_cleanup import action_rows as _action_rows
from openclaw_cli.cli.render_cleanup import warn_mode_hint as _warn_mode_hint
from openclaw_cli.maintenance.plan import plan_cleanup
from openclaw_cli.maintenance.report import cleanup_json, cleanup_summary
from openclaw_cli.ops.cleanup import StoreCleanup, store_views


def _view(plan, entries, now):
    return store_views([StoreCleanup("main", "p", "legacy", entries, plan, now)])[0]


def action_rows(plan, entries, now):
    """The table rows of a plan, as the CLI gets them (`ops.cleanup.store_views`)."""
    return _action_rows(_view(plan, entries, now)["actions"], now)


def warn_mode_hint(plan):
    return _warn_mode_hint(_view(plan, {}, 0)["wouldEnforce"])


DAY = 86_400_000
OUTPUTS = OPENCLAW_FIXTURE / "outputs"
FIXTURE_JSON = json.loads((OUTPUTS / "cleanup-dry-run.json").read_text())
FIXTURE_TEXT = (OUTPUTS / "cleanup-dry-run.txt").read_text().rstrip("\n").split("\n")
LISTING = json.loads((OUTPUTS / "sessions.json").read_text())["sessions"]
# The dry run ran seconds after the recovered row was written (its age reads "just now").
FIXTURE_NOW = LISTING[0]["updatedAt"] + 20_000


@dataclass(frozen=True)
class Settings:
    mode: str = "enforce"
    prune_after_ms: int | None = 30 * DAY
    max_entries: int | None = 500
    reset_archive_retention_ms: int | None = None
    max_disk_bytes: int | None = 2 * 1024**3
    high_water_bytes: int | None = 1_717_986_918
    model_run_prune_after_ms: int | None = DAY


def listing_store() -> dict:
    """The 13 rows of the real listing, as entries (they carry every field the cells read)."""
    return {row["key"]: row for row in LISTING}


def keep_all_plan(entries):
    """2026.9.6 kept all 13 rows; we get the same plan by preserving every key."""
    return plan_cleanup(
        entries, Settings(), now_ms=FIXTURE_NOW, session_bytes={}, preserve_keys=list(entries)
    )


# ---- JSON ---------------------------------------------------------------------------------------


def test_summary_keys_and_order_match_real_openclaw():
    entries = listing_store()
    plan = plan_cleanup(entries, Settings(), now_ms=FIXTURE_NOW, session_bytes={})
    summary = cleanup_summary(
        plan,
        agent_id="main",
        store_path=FIXTURE_JSON["storePath"],
        dry_run=True,
        unreferenced_artifacts={
            "scannedFiles": 0,
            "removedFiles": 0,
            "freedBytes": 0,
            "olderThanMs": 2592000000,
        },
    )
    assert list(summary) == list(FIXTURE_JSON)
    assert list(summary["unreferencedArtifacts"]) == list(FIXTURE_JSON["unreferencedArtifacts"])
    assert list(summary["diskBudget"]) == list(FIXTURE_JSON["diskBudget"])
    assert summary["archived"] == 0 and summary["capArchived"] == 0  # D11
    assert summary["beforeCount"] == 13
    # our rules (not 2026.9.6's): the 60-day-old direct chat is prunable
    assert summary["pruned"] == 1 and summary["afterCount"] == 12 and summary["wouldMutate"] is True


def test_format_only_fixture_round_trip():
    """Rendering OpenClaw's own numbers through our summary gives OpenClaw's document back."""
    plan = keep_all_plan(listing_store())
    summary = cleanup_summary(plan, agent_id="main", store_path=FIXTURE_JSON["storePath"], dry_run=True)
    summary["diskBudget"] = FIXTURE_JSON["diskBudget"]
    assert json.dumps(summary, indent=2) == json.dumps(FIXTURE_JSON, indent=2)


def test_apply_summary_adds_applied_fields_last():
    plan = keep_all_plan({"agent:main:a": {"sessionId": "a", "updatedAt": NOW_MS}})
    dry = cleanup_summary(plan, agent_id="main", store_path="p", dry_run=True)
    applied = cleanup_summary(plan, agent_id="main", store_path="p", dry_run=False, applied_count=7)
    assert list(applied)[-2:] == ["applied", "appliedCount"] and applied["appliedCount"] == 7
    assert {k: v for k, v in applied.items() if k not in ("dryRun", "applied", "appliedCount")} == {
        k: v for k, v in dry.items() if k != "dryRun"
    }
    assert cleanup_summary(plan, agent_id="main", store_path="p", dry_run=False)["appliedCount"] == 1


def test_unreferenced_artifacts_default_and_would_mutate():
    plan = plan_cleanup({}, Settings(mode="warn", prune_after_ms=7 * DAY), now_ms=NOW_MS)
    summary = cleanup_summary(plan, agent_id="main", store_path="p", dry_run=True)
    assert summary["unreferencedArtifacts"] == {
        "scannedFiles": 0,
        "removedFiles": 0,
        "freedBytes": 0,
        "olderThanMs": 7 * DAY,
    }
    assert summary["diskBudget"] is None and summary["wouldMutate"] is False
    swept = cleanup_summary(
        plan,
        agent_id="main",
        store_path="p",
        dry_run=True,
        unreferenced_artifacts={
            "scannedFiles": 3,
            "removedFiles": 1,
            "freedBytes": 10,
            "olderThanMs": 7 * DAY,
        },
    )
    assert swept["wouldMutate"] is True


def test_multi_store_wrapper_only_when_not_exactly_one():
    one = {"agentId": "main"}
    assert cleanup_json([one], mode="enforce", dry_run=True) is one  # §13 item 13
    two = cleanup_json([one, {"agentId": "work"}], mode="warn", dry_run=False)
    assert list(two) == ["allAgents", "mode", "dryRun", "stores"]
    assert two == {"allAgents": True, "mode": "warn", "dryRun": False, "stores": [one, {"agentId": "work"}]}
    assert cleanup_json([], mode="enforce", dry_run=True)["stores"] == []


# ---- cells --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "just now"),
        (29_000, "just now"),
        (30_000, "1m ago"),
        (59 * 60_000, "59m ago"),
        (60 * 60_000, "1h ago"),
        (90 * 60_000, "2h ago"),
        (47 * 3_600_000, "47h ago"),
        (48 * 3_600_000, "2d ago"),
        (60 * DAY, "60d ago"),
        (-1, "unknown"),
        (None, "unknown"),
        (float("nan"), "unknown"),
    ],
)
def test_format_time_ago(ms, text):
    assert format_time_ago(ms) == text


def test_key_truncation():
    assert truncate_key("agent:main:telegram:direct:123456789") == "agent:main:teleg...456789"  # EX6.4.a
    exactly = "a" * 26
    assert truncate_key(exactly) == exactly
    assert truncate_key("a" * 27) == "a" * 16 + "..." + "a" * 6
    emoji = "agent:main:x:" + "👍🏽" * 20  # 33 graphemes, 53 code points
    assert truncate_key(emoji) == "agent:main:x:👍🏽👍🏽👍🏽...👍🏽👍🏽👍🏽👍🏽👍🏽👍🏽"
    assert "\x1b" not in truncate_key("agent:\x1b[31mmain")
    assert split_graphemes("e\u0301🇫🇷👨\u200d👩x") == ["e\u0301", "🇫🇷", "👨\u200d👩", "x"]


def test_model_and_flags():
    assert display_model({}) == "unknown"
    assert display_model({"modelOverride": "o"}) == "o"
    assert display_model({"model": "m", "modelOverride": "o"}) == "m"
    entry = {
        "thinkingLevel": "high",
        "systemSent": True,
        "abortedLastRun": True,
        "visibility": "private",
        "owner": {"actor": {"type": "user", "label": " Ann "}},
        "runtimePolicySessionKey": "k",
        "participants": [{"label": "a"}, {"identity": {"type": "tg", "id": "1"}}] + [{"label": "z"}] * 3,
        "participantCount": 9,
        "sessionId": "sid\x1b[2J",
    }
    assert session_flags(entry) == (
        "think:high system aborted visibility:private owner:Ann participants:a,tg:1,z,z,+5 policy:k id:sid"
    )
    assert session_flags({}) == "visibility:shared"


def test_rows_sorted_by_updated_at_desc_with_unknown_age():
    entries = {
        "old": {"updatedAt": NOW_MS - 3 * DAY},
        "none": {},
        "new": {"updatedAt": NOW_MS - 1000},
        "zero": {"updatedAt": 0},
    }
    rows = action_rows(keep_all_plan(entries), entries, NOW_MS)
    assert [r.key for r in rows] == ["new", "old", "none", "zero"]
    assert [r.age for r in rows] == ["just now", "3d ago", "unknown", "unknown"]


# ---- text vs the real fixture -------------------------------------------------------------------


def _fixture_table_rows() -> list[tuple[str, ...]]:
    rows: list[list[str]] = []
    for line in FIXTURE_TEXT:
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0] == "Action":
            continue
        if cells[0]:
            rows.append(cells)
        else:
            for i, cell in enumerate(cells):
                if cell:
                    rows[-1][i] += ("" if rows[-1][i].endswith("-") else " ") + cell
    return [tuple(r) for r in rows]


def test_dry_run_text_matches_real_openclaw():
    entries = listing_store()
    plan = keep_all_plan(entries)
    rows = action_rows(plan, entries, FIXTURE_NOW)
    assert [r.cells() for r in rows] == _fixture_table_rows()
    text = render_dry_run_text(FIXTURE_JSON, rows, table_renderer=lambda headers, cells: "<table>").split(
        "\n"
    )
    table_start = FIXTURE_TEXT.index("Planned session actions:") + 1
    table_end = max(i for i, line in enumerate(FIXTURE_TEXT) if line.startswith("└"))
    assert text == FIXTURE_TEXT[:table_start] + ["<table>"] + FIXTURE_TEXT[table_end + 1 :]


def test_plain_table_renderer():
    table = render_table(TABLE_HEADERS, [("keep", "k", "just now", "m", "é 全")]).split("\n")
    assert table[0].startswith("┌") and table[-1].startswith("└") and table[2].startswith("├")
    assert table[1] == "│ Action │ Key │ Age      │ Model │ Flags │"
    assert table[3] == "│ keep   │ k   │ just now │ m     │ é 全  │"
    assert len({len(line) for line in table[:3]}) == 1


def test_label_summary_pinned():
    def r(action, label):
        return ActionRow(action, "k", None, "unknown", "unknown", "", label)

    rows = [
        r("keep", "Cron: daily-commit"),
        r("prune-stale", "Cron: daily-commit"),
        r("keep", None),
        r("prune-stale", "   "),
        r("cap-overflow", {}),
        r("keep", "Unlabeled"),
        r("evict-budget", "\u001b[31mAlert\nInjected"),
    ]
    assert label_summaries(rows) == [
        ("(unlabeled)", 1, 2),
        ("Alert\\nInjected", 0, 1),
        ("Cron: daily-commit", 1, 1),
        ("Unlabeled", 1, 0),
    ]
    summary = {
        "agentId": "main",
        "storePath": "p",
        "mode": "enforce",
        "beforeCount": 7,
        "afterCount": 3,
        "missing": 0,
        "dmScopeRetired": 0,
        "modelRunPruned": 0,
        "pruned": 2,
        "capped": 1,
        "unreferencedArtifacts": {"scannedFiles": 0},
        "diskBudget": None,
    }
    text = render_dry_run_text(summary, rows)
    assert "\x1b" not in text
    assert "Cron: daily-commit  1 kept, 1 pruned" in text.split("\n")
    assert "Alert\\nInjected     0 kept, 1 pruned" in text.split("\n")
    assert text.endswith("Total: 3 kept, 4 pruned")
    assert "Would prune unreferenced artifacts" not in text and "Would enforce disk budget" not in text


def test_conditional_lines_and_empty_store():
    summary = dict(FIXTURE_JSON, unreferencedArtifacts={"scannedFiles": 4, "removedFiles": 2})
    text = render_dry_run_text(summary, [])
    assert text.split("\n")[-2:] == [
        "Would prune unreferenced artifacts: 2",
        "Would enforce disk budget: 1454080 -> 1454080 bytes (files 0, entries 0)",
    ]
    assert "Planned session actions:" not in text and "Summary by Label:" not in text


def test_multi_store_dry_run_and_apply_text():
    a = dict(
        FIXTURE_JSON,
        agentId="main",
        storePath="/s/a",
        appliedCount=3,
        unreferencedArtifacts={"removedFiles": 2},
    )
    b = dict(
        FIXTURE_JSON,
        agentId="work",
        storePath="/s/b",
        appliedCount=0,
        unreferencedArtifacts={"removedFiles": 0},
    )
    text = render_dry_run_texts([(a, [], None), (b, [], "hint")])
    blocks = text.split("\n\n")
    assert blocks[0].startswith("Agent: main\nSession store: /s/a") and blocks[1].startswith("Agent: work")
    assert blocks[1].endswith("hint")
    assert render_dry_run_texts([(a, [], None)]).startswith("Session store: /s/a")
    assert render_apply_text([a]) == (
        "Session store: /s/a\nApplied maintenance. Current entries: 3\nPruned unreferenced artifacts: 2"
    )
    assert render_apply_text([a, b]) == (
        "Agent: main\nSession store: /s/a\nApplied maintenance. Current entries: 3\nPruned unreferenced artifacts: 2"
        "\n\nAgent: work\nSession store: /s/b\nApplied maintenance. Current entries: 0"
    )


def test_warn_mode_hint():
    entries = {"agent:main:old": {"sessionId": "o", "updatedAt": NOW_MS - 40 * DAY}}
    warn = plan_cleanup(entries, Settings(mode="warn"), now_ms=NOW_MS)
    hint = warn_mode_hint(warn)
    assert hint.startswith("Warn mode:") and "--enforce would also remove 1" in hint and "stale 1" in hint
    assert warn_mode_hint(plan_cleanup(entries, Settings(), now_ms=NOW_MS)) is None
    assert warn_mode_hint(plan_cleanup({}, Settings(mode="warn"), now_ms=NOW_MS)) is None


def test_parent_option_rejection():
    assert parent_option_rejection(["--json", "--store"]) is None
    assert parent_option_rejection(["--active"]) == (
        "`sessions cleanup` does not support the parent `sessions` option --active; "
        "session-list filters cannot scope session maintenance."
    )
    assert parent_option_rejection(["--verbose", "--active", "--limit"]) == (
        "`sessions cleanup` does not support the parent `sessions` options --active, --limit, --verbose; "
        "session-list filters cannot scope session maintenance."
    )
