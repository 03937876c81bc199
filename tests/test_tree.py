"""Transcript tree, active branch and context rebuild (storage-migration §3.5, R4.8.2)."""

from __future__ import annotations

import json
from typing import Any

from conftest import OPENCLAW_FIXTURE

from openclaw_cli.store.base import TranscriptLine
from openclaw_cli.store.transcript import iter_jsonl
from openclaw_cli.store.tree import (
    active_branch,
    build_context,
    context_entries,
    scan_tree,
    session_settings,
)

SUMMARY_INTRO = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)


def lines(*objs: Any) -> list[TranscriptLine]:
    out = []
    for i, obj in enumerate(objs):
        raw = obj if isinstance(obj, str) else json.dumps(obj)
        parsed = json.loads(raw)
        out.append(
            TranscriptLine(seq=i, raw=raw, obj=parsed if isinstance(parsed, dict) else None, line_no=i + 1)
        )
    return out


HEADER = {"type": "session", "version": 4, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def msg(ident: str, parent: str | None, role: str = "user", text: str | None = None, **extra: Any) -> dict:
    return {
        "type": "message",
        "id": ident,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text or ident}]},
        **extra,
    }


def compaction(ident: str, parent: str, kept: str, summary: str = "S") -> dict:
    return {
        "type": "compaction",
        "id": ident,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:02.000Z",
        "summary": summary,
        "firstKeptEntryId": kept,
        "tokensBefore": 1234,
    }


def ids(branch: list[TranscriptLine]) -> list[str | None]:
    return [line.obj.get("id") if line.obj else None for line in branch]


def texts(context: list[dict]) -> list[str]:
    out = []
    for message in context:
        content = message["content"]
        out.append(content if isinstance(content, str) else content[0]["text"])
    return out


# ---- R4.8.2 examples ------------------------------------------------------------------------------


def test_ex_4_8_a_kept_entries_after_summary():
    branch = active_branch(
        lines(
            HEADER,
            msg("U1", None),
            msg("A1", "U1", "assistant"),
            msg("U2", "A1"),
            msg("A2", "U2", "assistant"),
            compaction("C", "A2", kept="U2", summary="the summary"),
            msg("U3", "C"),
        )
    )
    assert ids(branch) == ["U1", "A1", "U2", "A2", "C", "U3"]
    context = build_context(branch)
    assert texts(context) == [SUMMARY_INTRO + "the summary\n</summary>", "U2", "A2", "U3"]
    assert context[0]["role"] == "user" and context[0]["timestamp"] == 1767225602000
    boundary, kept = context_entries(branch)
    assert boundary is not None and boundary.obj["id"] == "C"
    assert ids(kept) == ["U2", "A2", "U3"]


def test_ex_4_8_b_second_compaction_wins():
    branch = active_branch(
        lines(
            HEADER,
            msg("U1", None),
            msg("A1", "U1", "assistant"),
            msg("U2", "A1"),
            msg("A2", "U2", "assistant"),
            compaction("C1", "A2", kept="U2", summary="one"),
            msg("U3", "C1"),
            msg("A3", "U3", "assistant"),
            msg("U4", "A3"),
            compaction("C2", "U4", kept="U3", summary="two"),
            msg("U5", "C2"),
        )
    )
    assert texts(build_context(branch)) == [SUMMARY_INTRO + "two\n</summary>", "U3", "A3", "U4", "U5"]


def test_ex_4_8_c_unknown_first_kept_is_a_hard_checkpoint():
    branch = active_branch(
        lines(
            HEADER,
            msg("U1", None),
            msg("A1", "U1", "assistant"),
            compaction("C", "A1", kept="nope"),
            msg("U2", "C"),
        )
    )
    assert texts(build_context(branch)) == [SUMMARY_INTRO + "S\n</summary>", "U2"]


def test_first_kept_after_the_boundary_is_ignored():
    branch = active_branch(lines(HEADER, msg("U1", None), compaction("C", "U1", kept="U2"), msg("U2", "C")))
    assert texts(build_context(branch)) == [SUMMARY_INTRO + "S\n</summary>", "U2"]


# ---- tree rules -----------------------------------------------------------------------------------


def test_branching_follows_the_latest_leaf():
    branch = active_branch(
        lines(
            HEADER,
            msg("U1", None),
            msg("A1", "U1", "assistant"),
            msg("U2", "A1"),
            msg("A2", "U2", "assistant"),
            msg("U2b", "A1"),
            msg("A2b", "U2b", "assistant"),
        )
    )
    assert ids(branch) == ["U1", "A1", "U2b", "A2b"]


def test_side_entries_join_without_moving_the_leaf():
    tree_lines = lines(
        HEADER,
        msg("U1", None),
        msg("A1", "U1", "assistant"),
        {"type": "custom", "id": "side1", "parentId": "A1", "appendMode": "side", "customType": "x"},
        msg("U2", "A1"),
    )
    tree = scan_tree(tree_lines)
    assert tree.by_id["side1"].side and tree.leaf_id == "U2"
    assert ids(active_branch(tree_lines)) == ["U1", "A1", "U2"]
    side_last = lines(
        HEADER,
        msg("U1", None),
        {
            "type": "custom_message",
            "id": "s",
            "parentId": "U1",
            "appendMode": "side",
            "customType": "x",
            "content": "c",
            "display": True,
        },
    )
    assert ids(active_branch(side_last)) == ["U1"]


def test_leaf_control_moves_the_leaf_and_children_hang_from_its_target():
    base = [
        HEADER,
        msg("U1", None),
        msg("A1", "U1", "assistant"),
        msg("U2", "A1"),
        msg("A2", "U2", "assistant"),
    ]
    control = {"type": "leaf", "id": "L", "parentId": "A2", "targetId": "A1"}
    assert ids(active_branch(lines(*base, control))) == ["U1", "A1"]
    assert ids(active_branch(lines(*base, control, msg("U3", "L")))) == ["U1", "A1", "U3"]
    assert ids(active_branch(lines(*base, control, msg("U3", "A1")))) == ["U1", "A1", "U3"]
    empty = {"type": "leaf", "id": "L0", "parentId": "A2", "targetId": None}
    assert active_branch(lines(*base, empty)) == []


def test_leaf_control_to_unknown_id_is_ignored():
    base = [HEADER, msg("U1", None), msg("A1", "U1", "assistant")]
    bad = {"type": "leaf", "id": "L", "parentId": "A1", "targetId": "ghost"}
    tree = scan_tree(lines(*base, bad))
    assert tree.has_invalid_leaf_control and tree.leaf_id == "A1"
    assert ids(active_branch(lines(*base, bad, msg("U2", "A1")))) == ["U1", "A1", "U2"]


def test_append_parent_differs_from_target():
    opaque = {"type": "plugin_state", "id": "P", "parentId": "A1", "data": 1}
    control = {"type": "leaf", "id": "L", "parentId": "P", "targetId": "U1", "appendParentId": "P"}
    tree_lines = lines(HEADER, msg("U1", None), msg("A1", "U1", "assistant"), opaque, control, msg("U2", "P"))
    # U2 was physically appended at P, but the visible leaf is U1: it continues from U1.
    assert ids(active_branch(tree_lines)) == ["U1", "U2"]


def test_v1_entries_without_parent_attach_to_the_current_leaf():
    tree_lines = lines(
        HEADER,
        msg("U1", None),
        msg("A1", "U1", "assistant"),
        {"type": "message", "id": "U2", "message": {"role": "user", "content": "v1"}},
        msg("A2", "U2", "assistant"),
    )
    tree = scan_tree(tree_lines)
    assert tree.by_id["U2"].parent_id == "A1"
    assert ids(active_branch(tree_lines)) == ["U1", "A1", "U2", "A2"]


def test_pure_v1_file_without_ids_is_linear():
    tree_lines = lines(
        {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"},
        {"type": "message", "message": {"role": "user", "content": "hi"}},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}},
        {"type": "compaction", "summary": "v1 sum", "firstKeptEntryIndex": 1, "tokensBefore": 5},
        {"type": "message", "message": {"role": "user", "content": "again"}},
    )
    branch = active_branch(tree_lines)
    assert len(branch) == 4
    context = build_context(branch)
    assert context[0]["content"][0]["text"] == SUMMARY_INTRO + "v1 sum\n</summary>"
    assert context[1] == {"role": "user", "content": "again"}


def test_entries_crossing_a_reset_are_reattached_to_the_leaf():
    reset = {
        "type": "reset",
        "id": "R",
        "parentId": "A1",
        "timestamp": "2026-01-01T00:00:03.000Z",
        "reason": "daily",
    }
    tree_lines = lines(
        HEADER,
        msg("U1", None),
        msg("A1", "U1", "assistant"),
        reset,
        msg("U2", "U1"),  # a late writer still pointing before the reset
        msg("A2", "U2", "assistant"),
    )
    tree = scan_tree(tree_lines)
    assert tree.by_id["U2"].parent_id == "R" and tree.by_id["U2"].raw_parent_id == "U1"
    branch = active_branch(tree_lines)
    assert ids(branch) == ["U1", "A1", "R", "U2", "A2"]
    assert texts(build_context(branch)) == ["U2", "A2"]  # a reset is a boundary without a summary


def test_reset_keeps_entries_from_first_kept():
    reset = {"type": "reset", "id": "R", "parentId": "A2", "reason": "idle", "firstKeptEntryId": "U2"}
    branch = active_branch(
        lines(
            HEADER,
            msg("U1", None),
            msg("A1", "U1", "assistant"),
            msg("U2", "A1"),
            msg("A2", "U2", "assistant"),
            reset,
            msg("U3", "R"),
        )
    )
    assert texts(build_context(branch)) == ["U2", "A2", "U3"]


def test_unknown_parent_is_reattached_to_the_leaf():
    tree_lines = lines(HEADER, msg("U1", None), msg("A1", "U1", "assistant"), msg("U2", "ghost"))
    assert ids(active_branch(tree_lines)) == ["U1", "A1", "U2"]


def test_cycles_do_not_hang_and_invalidate_the_branch():
    tree_lines = lines(HEADER, msg("a", None), msg("b", "a"), msg("a", "b", text="again"))
    tree = scan_tree(tree_lines)
    assert tree.path_to(tree.leaf_id) is None
    assert active_branch(tree_lines) == []
    assert tree.contains("b", "zzz") is False


def test_opaque_unknown_entries_are_kept_in_the_tree_and_non_objects_ignored():
    opaque = {"type": "future_thing", "id": "F", "parentId": "A1", "payload": {"x": 1}}
    tree_lines = lines(
        HEADER, msg("U1", None), msg("A1", "U1", "assistant"), opaque, "[1,2,3]", msg("U2", "F")
    )
    tree = scan_tree(tree_lines)
    assert tree.by_id["F"].parent_id == "A1" and tree.leaf_id == "U2"
    assert tree.append_parent_id == "U2"
    # U2 was appended at the opaque cursor F: its visible parent is the leaf A1 (OpenClaw keeps
    # physical append state apart from the ancestry context builders see).
    assert tree.by_id["U2"].raw_parent_id == "F" and tree.by_id["U2"].parent_id == "A1"
    branch = active_branch(tree_lines)
    assert ids(branch) == ["U1", "A1", "U2"]
    assert texts(build_context(branch)) == ["U1", "A1", "U2"]
    # an opaque node a leaf control selects is on the path
    control = {"type": "leaf", "id": "L", "parentId": "U2", "targetId": "F"}
    assert ids(active_branch([*tree_lines, *lines(control)])) == ["U1", "A1", "F"]


def test_boundary_before_a_restarted_root_is_prepended():
    tree_lines = lines(
        HEADER,
        msg("U1", None),
        compaction("C", "U1", kept="U1", summary="carried"),
        msg("N1", None),
        msg("N2", "N1", "assistant"),
    )
    branch = active_branch(tree_lines)
    assert ids(branch) == ["C", "N1", "N2"]
    assert texts(build_context(branch)) == [SUMMARY_INTRO + "carried\n</summary>", "N1", "N2"]


# ---- message conversion ---------------------------------------------------------------------------


def test_context_message_kinds():
    entries = lines(
        HEADER,
        msg("U1", None),
        {"type": "model_change", "id": "M", "parentId": "U1", "provider": "openai", "modelId": "gpt-5.4"},
        {"type": "thinking_level_change", "id": "T", "parentId": "M", "thinkingLevel": "high"},
        {"type": "custom", "id": "X", "parentId": "T", "customType": "state", "data": {}},
        {"type": "label", "id": "Lb", "parentId": "X", "targetId": "U1", "label": "hi"},
        {
            "type": "custom_message",
            "id": "CM",
            "parentId": "Lb",
            "customType": "note",
            "content": "note text",
            "display": False,
            "timestamp": "2026-01-01T00:00:05.000Z",
        },
        {"type": "branch_summary", "id": "B", "parentId": "CM", "fromId": "U1", "summary": "side quest"},
        {
            "type": "message",
            "id": "E",
            "parentId": "B",
            "excludeFromContext": True,
            "message": {"role": "user", "content": "hidden"},
        },
        {
            "type": "message",
            "id": "E2",
            "parentId": "E",
            "message": {
                "role": "bashExecution",
                "command": "ls",
                "output": "a\nb",
                "exitCode": 2,
                "excludeFromContext": True,
            },
        },
        {
            "type": "message",
            "id": "Bash",
            "parentId": "E2",
            "message": {
                "role": "bashExecution",
                "command": "ls",
                "output": "a\nb",
                "exitCode": 2,
                "timestamp": 7,
            },
        },
        {
            "type": "message",
            "id": "H",
            "parentId": "Bash",
            "message": {"role": "hookMessage", "content": "from a hook", "timestamp": 8},
        },
        msg("A", "H", "assistant", model="ignored"),
    )
    branch = active_branch(entries)
    assert len(branch) == 12
    context = build_context(branch)
    assert texts(context) == [
        "U1",
        "note text",
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nside quest\n</summary>",
        "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2",
        "from a hook",
        "A",
    ]
    assert context[1] == {
        "role": "user",
        "content": [{"type": "text", "text": "note text"}],
        "timestamp": 1767225605000,
    }
    assert context[3]["timestamp"] == 7
    settings = session_settings(branch)
    assert settings["thinkingLevel"] == "high" and settings["modelId"] == "gpt-5.4"


def test_session_settings_fall_back_to_last_assistant_model():
    assistant = msg("A", "U", "assistant")
    assistant["message"].update(provider="anthropic", model="claude")
    settings = session_settings(active_branch(lines(HEADER, msg("U", None), assistant)))
    assert (settings["provider"], settings["modelId"], settings["source"]) == (
        "anthropic",
        "claude",
        "assistant",
    )


# ---- real fixture transcripts ---------------------------------------------------------------------


def test_fixture_transcripts_branch_and_context():
    sessions = OPENCLAW_FIXTURE / "legacy-state" / "agents" / "main" / "sessions"
    compacted = 0
    for path in sorted(sessions.glob("*.jsonl")):
        all_lines = list(iter_jsonl(path))
        entries = all_lines[1:]
        branch = active_branch(all_lines)
        # the generator writes one linear chain: the branch is every entry
        assert [line.raw for line in branch] == [line.raw for line in entries]
        context = build_context(branch)
        compactions = [i for i, line in enumerate(entries) if line.obj["type"] == "compaction"]
        messages = [line.obj["message"] for line in entries if line.obj["type"] == "message"]
        if not compactions:
            assert context == messages
            continue
        compacted += 1
        at = compactions[-1]
        comp = entries[at].obj
        kept_at = next(i for i, line in enumerate(entries) if line.obj["id"] == comp["firstKeptEntryId"])
        assert kept_at < at
        expected = [line.obj["message"] for line in entries[kept_at:] if line.obj["type"] == "message"]
        assert context[0]["content"][0]["text"] == SUMMARY_INTRO + comp["summary"] + "\n</summary>"
        assert context[1:] == expected
        assert len(context) < len(messages) + 1
    assert compacted == 3


def test_leaf_control_cannot_navigate_back_across_a_reset():
    reset = {"type": "reset", "id": "R", "parentId": "A1", "reason": "new"}
    control = {"type": "leaf", "id": "L", "parentId": "U2", "targetId": "U1"}  # points before the reset
    branch = active_branch(
        lines(
            HEADER,
            msg("U1", None),
            msg("A1", "U1", "assistant"),
            reset,
            msg("U2", "R"),
            control,
            msg("U3", "U1"),
        )
    )
    assert ids(branch) == ["U1", "A1", "R", "U2", "U3"]
