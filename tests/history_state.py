"""The state of the recording `tests/fixtures/gateway-2026.9.6-issue25/reads-7.jsonl` (README
there): the generated 12-session state of the other issue-25 recordings, with five entries
appended to `agent:main:main`'s transcript that chat.history's details need — a user message
without a `timestamp` of its own, a 200,000-character assistant text and a 300,000-character
tool result (over OpenClaw's 128 KiB single-message cap once `maxChars` lets them through), and
a short assistant answer after them. The same function made the recorded state and makes the
tests' state, so ids and times match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAIN = "agent:main:main"
APPENDED = ("hist0001", "hist0002", "hist0003", "hist0004", "hist0005")
STAMP_MS = 1796000100000
STAMP_ISO = "2026-11-30T08:15:00.000Z"  # the entries' own time (the messages carry STAMP_MS + n)


def _entries() -> list[dict[str, Any]]:
    def msg(n: int, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": "message", "id": APPENDED[n], "timestamp": STAMP_ISO, "message": message}

    return [
        msg(0, {"role": "user", "content": [{"type": "text", "text": "a message with no timestamp"}]}),
        msg(
            1,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "A" * 200_000}],
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5.4",
                "stopReason": "toolUse",
                "timestamp": STAMP_MS + 1,
            },
        ),
        msg(
            2,
            {
                "role": "toolResult",
                "toolCallId": "call_big000000",
                "toolName": "read",
                "content": [{"type": "text", "text": "B" * 300_000}],
                "isError": False,
                "timestamp": STAMP_MS + 2,
            },
        ),
        msg(
            3,
            {
                "role": "toolResult",
                "toolCallId": "call_nostamp00",
                "toolName": "exec",
                "content": [{"type": "text", "text": "C" * 300_000}],
                "isError": True,
            },
        ),
        msg(
            4,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "done after the large ones"}],
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5.4",
                "stopReason": "stop",
                "timestamp": STAMP_MS + 4,
            },
        ),
    ]


def transcript_of(state: Path, key: str = MAIN) -> Path:
    sessions = state / "agents" / "main" / "sessions"
    entry = json.loads((sessions / "sessions.json").read_text())[key]
    name = entry.get("sessionFile") or f"{entry['sessionId']}.jsonl"
    return sessions / Path(name).name


def craft(state: Path) -> list[str]:
    """Append the entries to the main session's transcript (chained after its last entry); the
    ids of every message entry of the transcript, in order."""
    path = transcript_of(state)
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    parent = next((obj["id"] for obj in reversed(lines) if isinstance(obj.get("id"), str)), None)
    with path.open("a") as out:
        for entry in _entries():
            out.write(json.dumps({**entry, "parentId": parent}, separators=(",", ":")) + "\n")
            parent = entry["id"]
    return [obj["id"] for obj in lines if obj.get("type") == "message"] + list(APPENDED)


def requests(ids: list[str], other_ids: dict[str, str]) -> list[list[Any]]:
    """The recorded requests: the tail and `maxChars` pages over the large messages, and
    `messageId` pages (middle, first, last, unknown, a non-message entry, byte-capped, with
    `sessionId`)."""
    mid = ids[len(ids) // 2]
    return [
        ["chat.history", {"sessionKey": MAIN, "limit": 6}],
        ["chat.history", {"sessionKey": MAIN, "limit": 6, "maxChars": 500000}],
        ["chat.history", {"sessionKey": MAIN, "limit": 5, "messageId": mid}],
        ["chat.history", {"sessionKey": MAIN, "limit": 4, "messageId": mid}],
        ["chat.history", {"sessionKey": MAIN, "limit": 5, "messageId": ids[0]}],
        ["chat.history", {"sessionKey": MAIN, "limit": 5, "messageId": ids[-1]}],
        ["chat.history", {"sessionKey": MAIN, "limit": 7, "messageId": ids[-4]}],
        ["chat.history", {"sessionKey": MAIN, "messageId": ids[3]}],
        ["chat.history", {"sessionKey": MAIN, "limit": 1, "messageId": mid}],
        ["chat.history", {"sessionKey": MAIN, "limit": 2, "messageId": mid}],
        ["chat.history", {"sessionKey": MAIN, "limit": 9, "messageId": mid, "maxBytes": 1500}],
        ["chat.history", {"sessionKey": MAIN, "limit": 9, "messageId": ids[-3], "maxChars": 500000}],
        ["chat.history", {"sessionKey": MAIN, "limit": 5, "messageId": "nope"}],
        ["chat.history", {"sessionKey": MAIN, "limit": 5, "messageId": other_ids["nonMessage"]}],
        [
            "chat.history",
            {"sessionKey": MAIN, "limit": 3, "messageId": mid, "sessionId": other_ids["sessionId"]},
        ],
        ["chat.history", {"sessionKey": MAIN, "limit": 3, "messageId": mid, "sessionId": "not-a-session"}],
        ["chat.history", {"sessionKey": "agent:main:nope", "limit": 3, "messageId": mid}],
    ]


def other_ids(state: Path) -> dict[str, str]:
    """The main session's id and the id of an entry chat.history does not show (a model change)."""
    path = transcript_of(state)
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    non_message = next(o["id"] for o in lines if o.get("type") == "model_change")
    sessions = state / "agents" / "main" / "sessions"
    sid = json.loads((sessions / "sessions.json").read_text())[MAIN]["sessionId"]
    return {"nonMessage": non_message, "sessionId": sid}
