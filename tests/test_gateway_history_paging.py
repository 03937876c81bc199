"""chat.history's `messageId` pages, the 128 KiB single-message placeholder and messages without a
timestamp against the real 2026.9.6 Gateway's recorded answers
(tests/fixtures/gateway-2026.9.6-issue25/reads-7.jsonl, README there; the state is
`tests/history_state.py`'s): the same requests on the same state answer with the same messages
(OpenClaw's event-log positions aside), the same page fields and the same errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.ops.history import OVERSIZED_TEXT, _around_bytes
from tests import history_state
from tests.conftest import generate_legacy_state
from tests.gateway_server_support import TOKEN, Client, GatewayThread, write_config

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "gateway-2026.9.6-issue25" / "reads-7.jsonl"
CONFIG = {
    "agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}},
    "gateway": {"mode": "local", "bind": "loopback", "auth": {"mode": "token", "token": TOKEN}},
}
EVENT_LOG_FIELDS = ("deltaCursor", "activity")  # only OpenClaw's event log has these
PAGE_FIELDS = ("offset", "nextOffset", "hasMore", "totalMessages", "sessionId")
UNKNOWN_SESSION = "rec-17"
BYTE_CAPPED = "rec-11"  # a messageId page held to maxBytes: compared by the rule (below)


def exchanges() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    frames = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    requests = {f["frame"]["id"]: f["frame"] for f in frames if f["dir"] == "out"}
    return [
        (requests[f["frame"]["id"]], f["frame"])
        for f in frames
        if f["dir"] == "in" and f["frame"].get("type") == "res" and f["frame"]["id"] != "rec-0"
    ]


@pytest.fixture
def state(state_dir: Path) -> Path:
    generate_legacy_state(state_dir, 12, 0, 4242, "--cron-key-style", "canonical")
    write_config(state_dir, CONFIG)
    history_state.craft(state_dir)
    return state_dir


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    """A message without OpenClaw's event-log position (and a compaction row without our summary);
    a placeholder's clock time (a message that had no timestamp of its own) as a mark."""
    out = dict(message)
    meta = {k: v for k, v in out.pop("__openclaw", {}).items() if k != "transcriptPosition"}
    if "kind" in meta:  # ours adds a compaction's summary (OpenClaw's page fetches it apart)
        meta.pop("summary", None)
    out["__openclaw"] = meta
    if meta.get("reason") == "oversized" and out.get("timestamp", 0) > history_state.STAMP_MS + 10**6:
        out["timestamp"] = "<clock>"
    return out


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_recorded_message_id_pages_and_placeholders(state: Path) -> None:
    compared = 0
    placeholders = 0
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        for request, recorded in exchanges():
            where = f"{request['id']} {request['params']}"
            ours = client.request(request["method"], request["params"])
            assert ours["ok"] == recorded["ok"], f"{where}: {ours}"
            compared += 1
            if not recorded["ok"]:
                assert ours["error"] == recorded["error"], where
                continue
            theirs, mine = recorded["payload"], ours["payload"]
            expected = {k for k in theirs if k not in EVENT_LOG_FIELDS}
            assert expected <= set(mine), where
            if request["id"] == UNKNOWN_SESSION:  # the row OpenClaw makes up for an unstored key
                _assert_made_up_row(mine["sessionInfo"], theirs["sessionInfo"])
            for name in PAGE_FIELDS:
                assert (name in mine) == (name in theirs), f"{where}: {name}"
                assert mine.get(name) == theirs.get(name), f"{where}: {name}"
            if request["id"] == BYTE_CAPPED:
                continue
            assert [_comparable(m) for m in mine["messages"]] == [
                _comparable(m) for m in theirs["messages"]
            ], where
            placeholders += sum(OVERSIZED_TEXT in json.dumps(m) for m in mine["messages"])
    assert compared == 17
    assert placeholders == 6  # three messages over 128 KiB, in two recorded pages


# the recorded row's run/runtime settings our rows carry for no session (no agent runtime here)
RUNTIME_FIELDS = {
    "effectiveFastMode",
    "effectiveFastModeSource",
    "fastAutoOnSeconds",
    "effectiveResponseUsage",
    "effectiveQueueMode",
    "modelOverrideSource",
    "runtimeSelectionLocked",
    "agentRuntime",
}


def _assert_made_up_row(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert theirs["updatedAt"] is None and "sessionId" not in theirs and "visibility" not in theirs
    assert list(mine) == [k for k in theirs if k not in RUNTIME_FIELDS]  # same fields, same order
    assert {k: v for k, v in mine.items() if k != "snapshotAt"} == {
        k: v for k, v in theirs.items() if k not in RUNTIME_FIELDS | {"snapshotAt"}
    }


def test_message_id_byte_cap_rule_reproduces_the_recording(state: Path) -> None:
    """OpenClaw grows a messageId page around the anchor within maxBytes, each message costing its
    JSON (with its activity row) and a comma. The rule applied to the recorded messages' own sizes
    keeps exactly the recorded ones; ours applies it to our (smaller) messages."""
    pairs = {request["id"]: (request, recorded) for request, recorded in exchanges()}
    request, capped = pairs[BYTE_CAPPED]
    params = request["params"]
    # the same page without the cap, as the real Gateway rendered it (rec-8: every message)
    everything = pairs["rec-8"][1]["payload"]
    rows = {a["messageId"]: a for a in everything.get("activity", [])}
    ids = [m["__openclaw"]["id"] for m in everything["messages"]]
    anchor = ids.index(params["messageId"])
    older = params["limit"] - params["limit"] // 2 - 1
    window = everything["messages"][anchor - older : anchor - older + params["limit"]]
    sizes = [
        _size(m) + (_size(rows[m["__openclaw"]["id"]]) + 1 if m["__openclaw"]["id"] in rows else 0)
        for m in window
    ]
    framing = 13 if any(m["__openclaw"]["id"] in rows for m in window) else 0
    first, last = _around_bytes(sizes, older, params["maxBytes"] - 1 - framing)
    assert [m["__openclaw"]["id"] for m in window[first:last]] == [
        m["__openclaw"]["id"] for m in capped["payload"]["messages"]
    ]
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        whole = client.request("chat.history", {**params, "maxBytes": 6_000_000})["payload"]["messages"]
        page = client.request("chat.history", params)["payload"]["messages"]
    mine = [_size(m) for m in whole]
    index = [m["__openclaw"]["id"] for m in whole].index(params["messageId"])
    first, last = _around_bytes(mine, index, params["maxBytes"] - 1)
    assert page == whole[first:last]
    recorded_ids = {m["__openclaw"]["id"] for m in capped["payload"]["messages"]}
    assert recorded_ids <= {m["__openclaw"]["id"] for m in page}  # ours are smaller: at least theirs
