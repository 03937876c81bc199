"""The method table is each method's whole contract (issue 24): every row complete, one schema for
the local call and the Gateway, one scope policy, events and hello-ok order read from the rows."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from openclaw_cli.errors import UsageError
from openclaw_cli.ops import params as schemas
from openclaw_cli.ops.methods import METHODS, Method, call, check_params, resolve
from openclaw_cli.ops.scopes import ADMIN, READ, WRITE, least_privilege_scopes

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "gateway-2026.9.6"


def test_every_row_is_complete() -> None:
    for name, row in METHODS.items():
        assert row.name == name
        assert callable(resolve(row.handler)), name
        assert list(inspect.signature(resolve(row.handler)).parameters)[:2] == ["ctx", "params"], name
        assert isinstance(row.params, schemas.Schema), name
        assert row.scope in (READ, WRITE, ADMIN), name
        for reference in (row.scope_for, row.batch):
            assert reference is None or callable(resolve(reference)), (name, reference)
        if row.event is not None:
            assert row.mutates, name  # only a committed write tells subscribers
        assert row.local <= {"store", "dryRun", "verbose", "limit"}, name


def test_a_row_without_a_schema_cannot_be_built_and_unknown_methods_fail_closed() -> None:
    with pytest.raises(TypeError, match="params must be a schema"):
        Method("sessions.rename", "openclaw_cli.ops.lifecycle:sessions_patch", None, WRITE)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown method: sessions.rename"):
        check_params("sessions.rename", {"anything": 1})


def test_hello_ok_order_is_the_tables_and_openclaws() -> None:
    from openclaw_cli.gateway.server import served_methods

    recorded = (FIXTURES / "handshake-untruncated.jsonl").read_text()
    hello = next(
        json.loads(line)["frame"]["payload"]
        for line in recorded.splitlines()
        if '"hello-ok"' in line and json.loads(line)["frame"].get("ok")
    )
    theirs = [m for m in hello["features"]["methods"] if m in METHODS]
    announced = [name for name, row in METHODS.items() if row.advertised]  # ours-only rows are not
    assert served_methods() == announced == theirs


def test_client_asks_what_the_server_enforces() -> None:
    cases = [
        ("sessions.patch", {"key": "k", "pinned": True}, WRITE),
        ("sessions.patch", {"key": "k", "verboseLevel": "on"}, ADMIN),
        ("sessions.delete", {"key": "k", "archivedOnly": True}, WRITE),
        ("sessions.create", {"key": "k", "incognito": True}, ADMIN),
        ("sessions.create", {"parentSessionKey": "agent:main:main", "fork": True}, WRITE),
        ("sessions.cleanup", {}, ADMIN),
        ("health", None, READ),
    ]
    for method, params, want in cases:
        assert least_privilege_scopes(method, params) == [want], method
        assert METHODS[method].required_scope(params) == want, method
    assert least_privilege_scopes("sessions.resolve") == [READ]  # OpenClaw's, not served here
    assert ADMIN in least_privilege_scopes("cron.add")  # unclassified: the CLI's default set


@pytest.fixture
def ctx(legacy_fixture_state: Path):
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    return Context.load(resolve_paths())


# The drift the issue found: each key now gets OpenClaw 2026.9.6's answer on both paths (the
# real schema refuses `ownerId` on create and accepts `incognito` and `inheritedToolPolicyVersion`,
# which we do not act on).
@pytest.mark.parametrize(
    "method, params, text",
    [
        (
            "sessions.create",
            {"ownerId": "u1"},
            "invalid sessions.create params: at root: unexpected property 'ownerId'",
        ),
        (
            "sessions.create",
            {"incognito": True},
            "sessions.create: incognito is not supported by openclaw-cli",
        ),
        (
            "sessions.patch",
            {"key": "agent:main:main", "inheritedToolPolicyVersion": 1},
            "sessions.patch: inheritedToolPolicyVersion is not supported by openclaw-cli",
        ),
        (
            "sessions.patch",
            {"key": "agent:main:main", "inheritedToolOverrides": {}},
            "invalid sessions.patch params: at root: unexpected property 'inheritedToolOverrides'",
        ),
    ],
)
def test_local_call_and_gateway_schema_agree(ctx, method: str, params: dict, text: str) -> None:
    with pytest.raises(UsageError) as caught:
        call(ctx, method, params)
    assert caught.value.message.startswith(text)
    gateway = check_params(method, params)
    if "params:" in text:
        assert gateway == caught.value.message
    else:
        assert gateway is None  # the Gateway's schema accepts it; the handler refuses it the same way


def test_local_only_params_never_pass_the_wire_schema(ctx) -> None:
    key = "agent:main:main"
    assert call(ctx, "sessions.compact", {"key": key, "dryRun": True})["dryRun"] is True
    assert check_params("sessions.compact", {"key": key, "dryRun": True}) == (
        "invalid sessions.compact params: at root: unexpected property 'dryRun'"
    )
