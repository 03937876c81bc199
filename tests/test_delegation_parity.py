"""Delegation sends what the user asked (issue 22 §6): every mutating CLI verb, run once against a
Gateway and once locally on an identical twin state, sends the Gateway the params its local run
applies, and both runs leave the same rows.

The Gateway here is a fake WebSocket server (tests/gateway_support.py) whose every request is
served by our own method handlers (`ops.methods.call`) on twin state B: the requests are recorded
on the wire, the local run's on state A where `ops.methods.call` (or the verb's local entry point)
is called. Explicit nulls (`label --clear`) must survive the trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gateway_support import FakeGateway, free_port

from tests.compact_support import copy_tree
from tests.lifecycle_support import KEYS, cli, make_templates, rows, use_template

TOKEN = "secret-token"
VOLATILE = (
    "updatedAt",
    "lifecycleRevision",
    "archivedAt",
    "pinnedAt",
    "markedUnreadAt",
    "lastReadAt",
    "sessionStartedAt",
    "createdAt",
    "compactedAt",
    "lastCompactedAt",
    "sessionFile",
)

# (CLI args, the Gateway method the mutation is) — every mutating verb with a Gateway method
VERBS = [
    (("sessions", "archive", KEYS["other"]), "sessions.patch"),
    (("sessions", "pin", KEYS["group"]), "sessions.patch"),
    (("sessions", "label", KEYS["direct"], "Quarterly planning"), "sessions.patch"),
    (("sessions", "label", KEYS["group"], "--clear"), "sessions.patch"),
    (("sessions", "mark-unread", KEYS["direct"]), "sessions.patch"),
    (("sessions", "mark-read", KEYS["direct"]), "sessions.patch"),
    (("sessions", "reset", KEYS["direct"]), "sessions.reset"),
    (("sessions", "fork", KEYS["main"], "--label", "Forked"), "sessions.create"),
    (("sessions", "delete", KEYS["other"], "--yes"), "sessions.delete"),
    (("sessions", "compact", KEYS["main"], "--max-lines", "3"), "sessions.compact"),
    (("sessions", "cleanup", "--enforce"), "sessions.cleanup"),
]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "parity", kinds=("sqlite",))


@pytest.fixture(autouse=True)
def config_port_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENCLAW_GATEWAY_PORT", raising=False)


def _configure(state: Path, port: int) -> None:
    path = state / "openclaw.json"
    config = json.loads(path.read_text()) if path.exists() else {}
    config["gateway"] = {"port": port, "auth": {"mode": "token", "token": TOKEN}}
    path.write_text(json.dumps(config))


def _twin_context(state: Path) -> Any:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    return Context.load(
        resolve_paths(
            {
                "OPENCLAW_STATE_DIR": str(state),
                "HOME": str(state.parent),
                "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
            }
        )
    )


def _served_by(state: Path):
    """A responder that serves every request with our handlers on `state`."""
    from openclaw_cli.errors import OpenClawError
    from openclaw_cli.ops.methods import call

    def respond(method: str, params: Any, send_event: Any) -> tuple:
        try:
            return ("ok", call(_twin_context(state), method, params))
        except OpenClawError as exc:
            return ("error", {"code": "INVALID_REQUEST", "message": exc.message})

    return respond


def _local_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """(method, params) of every local application: `ops.methods.call`, and the verbs whose local
    path is their own operation (cleanup: its params; compact: its options as params)."""
    import openclaw_cli.ops.cleanup as cleanup_ops
    import openclaw_cli.ops.compact as compact_ops
    import openclaw_cli.ops.methods as methods

    seen: list[tuple[str, dict[str, Any]]] = []
    real_call, real_options, real_compact = (
        methods.call,
        cleanup_ops.options_from_params,
        compact_ops.compact_or_skip,
    )

    def call(ctx: Any, name: str, params: dict[str, Any] | None = None) -> Any:
        seen.append((name, dict(params or {})))
        return real_call(ctx, name, params)

    def options_from_params(params: dict[str, Any]) -> Any:
        seen.append(("sessions.cleanup", dict(params)))
        return real_options(params)

    def compact_or_skip(ctx: Any, key: str, **kw: Any) -> Any:
        asked = {
            "key": key,
            "agentId": kw.get("agent"),
            "maxLines": kw.get("max_lines"),
            "keepRecentTokens": kw.get("keep_recent_tokens"),
            "provider": kw.get("provider"),
            "tokenizer": None if kw.get("tokenizer") in (None, "exact") else kw.get("tokenizer"),
            "instructions": kw.get("instructions"),
        }
        seen.append(("sessions.compact", {k: v for k, v in asked.items() if v is not None}))
        return real_compact(ctx, key, **kw)

    monkeypatch.setattr(methods, "call", call)
    monkeypatch.setattr(cleanup_ops, "options_from_params", options_from_params)
    monkeypatch.setattr(compact_ops, "compact_or_skip", compact_or_skip)
    return seen


def _comparable(state: Path, known: set[str]) -> dict[str, dict[str, Any]]:
    """Rows without what differs between two runs of one change (times, revisions): a session id
    the template did not hold (a fork's, or a new generation's where the release renews it) is
    compared as "new"."""
    out = {}
    for key, entry in rows(state).items():
        if ":dashboard:" in key:  # a fork's new key holds a fresh uuid: compared by its parent
            key = f"fork-of:{entry.get('parentSessionKey')}"
        row = {k: v for k, v in entry.items() if k not in VOLATILE}
        for name in ("sessionId", "usageFamilySessionIds"):
            value = row.get(name)
            if isinstance(value, str) and value not in known:
                row[name] = "new"
            elif isinstance(value, list):
                row[name] = ["new" if item not in known else item for item in value]
        out[key] = row
    return out


@pytest.mark.parametrize(("args", "method"), VERBS, ids=[" ".join(v[0][1:]) for v in VERBS])
def test_a_gateway_gets_the_params_a_local_run_applies(
    args: tuple[str, ...], method: str, templates, state_dir, tmp_path, monkeypatch
):
    use_template(templates["sqlite"], state_dir)
    if "--clear" in args:
        from openclaw_cli.ops.context import Context
        from openclaw_cli.ops.methods import call
        from openclaw_cli.paths import resolve_paths

        call(Context.load(resolve_paths()), "sessions.patch", {"key": KEYS["group"], "label": "Team"})
    twin = copy_tree(state_dir, tmp_path / "twin" / ".openclaw")
    known = {entry["sessionId"] for entry in rows(state_dir).values()}

    with FakeGateway(respond=_served_by(twin)) as fake:
        _configure(state_dir, fake.port)
        before = rows(state_dir)
        code, out, err = cli(*args, "--json")
        assert code == 0, (out, err)
        assert rows(state_dir) == before  # the Gateway served it: nothing written here
    sent = [(f["method"], f["params"]) for f in fake.requests() if f["method"] == method]
    assert len(sent) == 1, fake.requests()

    _configure(state_dir, free_port())  # nothing listens: the same command runs locally
    local = _local_calls(monkeypatch)
    code, out, err = cli(*args, "--json")
    assert code == 0, (out, err)
    assert "ran locally" in err
    applied = [
        (name, {k: v for k, v in params.items() if k not in ("dryRun", "store")})
        for name, params in local
        if name == method
    ]
    assert applied == sent, (applied, sent)
    if "--clear" in args:
        assert sent[0][1]["label"] is None and "label" not in rows(twin)[KEYS["group"]]
    mine, theirs = _comparable(state_dir, known), _comparable(twin, known)
    assert mine == theirs, [
        (
            k,
            {
                f: (mine[k].get(f), theirs[k].get(f))
                for f in {*mine[k], *theirs[k]}
                if mine[k].get(f) != theirs[k].get(f)
            },
        )
        for k in mine
        if mine[k] != theirs.get(k)
    ]
