"""The Gateway inventory (issue 25): docs/gateway.md and ops/openclaw_features.py are what
scripts/gen_gateway_inventory.py makes of the recorded hello-ok and the method table; every method
OpenClaw advertises that we do not serve answers UNAVAILABLE on a real socket, never `unknown
method`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from openclaw_cli.ops import inventory
from openclaw_cli.ops.methods import METHODS
from openclaw_cli.ops.openclaw_features import OPENCLAW_EVENTS, OPENCLAW_METHODS
from tests.gateway_server_support import Client, GatewayThread

ROOT = Path(__file__).resolve().parent.parent


def test_generated_files_match_the_recording_and_the_method_table() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_gateway_inventory.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr + " (run python scripts/gen_gateway_inventory.py)"


def test_recorded_lists_are_whole() -> None:
    assert len(OPENCLAW_METHODS) == 466 and len(set(OPENCLAW_METHODS)) == 466
    assert len(OPENCLAW_EVENTS) == 64


def test_every_advertised_row_is_one_of_openclaws_and_marked_served() -> None:
    doc = (ROOT / "docs" / "gateway.md").read_text()
    for name, row in METHODS.items():
        if row.advertised:
            assert name in OPENCLAW_METHODS, name
            assert f"| `{name}` | " in doc and inventory.method_status(name) == ("served", "")
    for name in OPENCLAW_METHODS:
        status, why = inventory.method_status(name)
        assert (status == "served") == (name in METHODS)
        assert status != "refused-by-design" or why


def test_no_session_related_method_or_event_is_not_yet() -> None:
    """Issue 25's "Done when": every session-related method and event of OpenClaw's list (and the
    ones it serves unlisted) is served or refused by design, and the doc's summary line says so."""
    pending = [n for n in OPENCLAW_METHODS if inventory.session_related(n)]
    pending = [n for n in pending if inventory.method_status(n)[0] == inventory.NOT_YET]
    pending += [
        n
        for n in OPENCLAW_EVENTS
        if inventory.session_related(n) and inventory.event_status(n)[0] == inventory.NOT_YET
    ]
    assert not pending, pending
    assert all(name in METHODS for name in inventory.UNLISTED_METHODS)
    doc = (ROOT / "docs" / "gateway.md").read_text()
    assert "Session-related and not yet served: none." in doc
    rows = [line for line in doc.splitlines() if line.startswith("| `") and "| yes |" in line]
    assert rows and not [line for line in rows if "| not yet |" in line]


def test_unserved_methods_answer_unavailable_not_unknown() -> None:
    refused = next(n for n in OPENCLAW_METHODS if inventory.method_status(n)[0] == "refused-by-design")
    pending = [n for n in OPENCLAW_METHODS if inventory.method_status(n)[0] == "not yet"]
    with GatewayThread() as gw, Client(gw.url) as client:
        assert client.hello()["ok"]
        for name in [refused, "chat.send", *pending[:1]]:
            res = client.request(name, {})
            assert not res["ok"] and res["error"]["code"] == "UNAVAILABLE", res
            assert res["error"]["message"].startswith(f"{name} unavailable: ")
            assert res["error"]["details"]["method"] == name
        assert client.request("chat.send", {})["error"]["details"]["reason"] == "refused-by-design"
        res = client.request("sessions.nope", {})
        assert res["error"] == {"code": "INVALID_REQUEST", "message": "unknown method: sessions.nope"}
    assert json.dumps(res)  # the frames are JSON
