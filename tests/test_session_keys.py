"""One owner rule and one key resolver (issue 24, `ops/session_keys.py`): `sessions.describe`,
`sessions.preview` and `sessions.patch` pick the same agent and the same stored row for a key, as
OpenClaw 2026.9.6's Gateway does (`resolveRequestedSessionAgentId`, then the row; docs/decisions.md
"Issue 24: one key resolver")."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from openclaw_cli.errors import PreconditionError, UsageError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.methods import call
from openclaw_cli.paths import resolve_paths

MIXED = "agent:main:dashboard:MixedCase"  # stored with capitals; asked for in lower case
PLAIN = "agent:main:dashboard:plain"


def _write_store(state_dir: Path, agent: str, keys: list[str]) -> None:
    sessions = state_dir / "agents" / agent / "sessions"
    sessions.mkdir(parents=True)
    rows = {key: {"sessionId": str(uuid.uuid4()), "updatedAt": 1796000000000} for key in keys}
    (sessions / "sessions.json").write_text(json.dumps(rows))


@pytest.fixture
def two_agents(state_dir: Path) -> Context:
    _write_store(state_dir, "main", [MIXED, PLAIN])
    _write_store(state_dir, "ops", ["agent:ops:dashboard:plain"])
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"entries": {"main": {}, "ops": {}}}}))
    return Context.load(resolve_paths(), clock=lambda: 1796000000000)


def test_an_unowned_key_is_refused_alike_when_several_agents_are_configured(two_agents: Context) -> None:
    """Before, describe searched every agent's store for `dashboard:plain` and answered with the
    first row found while patch refused; OpenClaw refuses both (no owner)."""
    for method, params in (
        ("sessions.describe", {"key": "dashboard:plain"}),
        ("sessions.preview", {"keys": ["dashboard:plain"]}),
        ("sessions.patch", {"key": "dashboard:plain", "label": "x", "dryRun": True}),
    ):
        with pytest.raises(PreconditionError, match="Multiple agents are configured.*no explicit owner"):
            call(two_agents, method, params)
    described = call(two_agents, "sessions.describe", {"key": "dashboard:plain", "agentId": "ops"})
    assert described["session"]["key"] == "agent:ops:dashboard:plain"


def test_describe_finds_the_row_patch_finds(two_agents: Context) -> None:
    """A key asked for in another case: patch found the stored row (normalised comparison),
    describe answered null before; both now name the same stored key."""
    asked = MIXED.lower()
    described = call(two_agents, "sessions.describe", {"key": asked})
    patched = call(two_agents, "sessions.patch", {"key": asked, "label": "x", "dryRun": True})
    assert described["session"]["key"] == patched["key"] == MIXED


def test_a_key_of_another_agent_is_refused_alike(two_agents: Context) -> None:
    for method, params in (
        ("sessions.describe", {"key": PLAIN, "agentId": "ops"}),
        ("sessions.patch", {"key": PLAIN, "agentId": "ops", "label": "x", "dryRun": True}),
    ):
        with pytest.raises(UsageError, match='belongs to agent "main", not "ops"'):
            call(two_agents, method, params)


def test_an_unknown_key_is_null_not_an_error(two_agents: Context) -> None:
    assert call(two_agents, "sessions.describe", {"key": "agent:main:dashboard:nope"}) == {"session": None}
