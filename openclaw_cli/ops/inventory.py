"""What our Gateway does with each method and event OpenClaw 2026.9.6's Gateway advertises
(its hello-ok `features`, `ops/openclaw_features.py`, generated from the recorded handshake):
served (a row of `ops/methods.py`), refused by design (the line issue 25 draws: our Gateway owns
session state and runs no agents, models, channels, nodes or plugins), or not yet.

A method refused by design or not yet served is still answered as OpenClaw answers a capability
it cannot offer (`UNAVAILABLE`, `gateway/protocol.unavailable_method`), never `unknown method`.
`docs/gateway.md` is this module as a table (`scripts/gen_gateway_inventory.py`; a test fails when
it drifts).
"""

from __future__ import annotations

from openclaw_cli.ops.methods import METHODS
from openclaw_cli.ops.openclaw_features import OPENCLAW_EVENTS, OPENCLAW_METHODS

SERVED = "served"
REFUSED = "refused-by-design"
NOT_YET = "not yet"

# Refused by design, first match wins: (exact name or "prefix.*", why).
_REFUSED: tuple[tuple[str, str], ...] = (
    # needs an agent run or a model
    ("chat.send", "starts an agent run"),
    ("chat.abort", "aborts an agent run (we run none)"),
    ("chat.toolTitles", "needs a model to title tool calls"),
    ("sessions.send", "starts an agent run"),
    ("sessions.abort", "aborts an agent run (we run none)"),
    ("sessions.dispatch", "starts an agent run"),
    ("sessions.recover", "restarts an interrupted agent run"),
    ("sessions.rewind", "rewinds an agent run's workspace"),
    ("sessions.companion.*", "a companion agent run"),
    ("sessions.title.prepare", "needs a model to title the session"),
    ("sessions.providerReview.continue", "continues a model provider's review run"),
    ("sessions.activitySummary.ensure", "needs a model to summarise activity"),
    ("sessions.goal.*", "goals steer agent runs"),
    ("sessions.pluginPatch", "plugin-owned session state (we load no plugins)"),
    ("sessions.github.*", "GitHub publishing of an agent's work"),
    ("sessions.catalog.*", "other CLIs' sessions, continued by an agent run"),
    ("sessions.files.*", "an agent's workspace files"),
    ("sessions.diff", "an agent's workspace changes"),
    ("sessions.storage.run", "OpenClaw's cold transcript storage (ours keeps every transcript hot)"),
    ("sessions.move", "moves a session between hosts (placement)"),
    ("sessions.reclaim", "reclaims an agent run's placement"),
    ("sessions.viewers.set", "live viewers of an agent run"),
    ("sessions.messages.*", "live message streams of agent runs"),  # subscribe/unsubscribe served: empty
    ("sessions.observer.visibility", "multi-user sharing (identities we do not hold)"),
    ("sessions.assignOwner", "multi-user sharing (identities we do not hold)"),
    ("sessions.setInvolvement", "multi-user sharing (identities we do not hold)"),
    ("session.*", "multi-user sharing, typing and suggestions of live runs"),
    ("transcripts.summarize", "needs a model"),
    ("transcripts.*", "meeting transcripts of capture providers (not session transcripts)"),
    ("agent", "starts an agent run"),
    ("agent.*", "agent runs"),
    ("agents.create", "writes agent config (use `openclaw agents`)"),
    ("agents.update", "writes agent config (use `openclaw agents`)"),
    ("agents.files.*", "an agent's workspace files"),
    ("agents.workspace.*", "an agent's workspace files"),
    ("conversations.*", "channel conversations"),
    ("send", "sends through a channel"),
    ("message.action", "acts on a channel message"),
    ("wake", "wakes an agent"),
    ("last-heartbeat", "agent heartbeats"),
    ("set-heartbeats", "agent heartbeats"),
    ("system-event", "injects an event into an agent run"),
    ("openclaw.*", "OpenClaw's own assistant and setup"),
    ("wizard.*", "OpenClaw's onboarding wizard"),
    # the rest of OpenClaw's runtime
    ("channels.*", "channels (we run none)"),
    ("models.*", "model providers (we call none)"),
    ("tts.*", "speech (we run no models)"),
    ("talk.*", "voice sessions (we run no models)"),
    ("voicewake.*", "voice wake (we run no models)"),
    ("tools.*", "agent tools"),
    ("mcp.*", "MCP apps of agent runs"),
    ("memory.*", "agent memory"),
    ("doctor.memory.*", "agent memory"),
    ("migrations.memory.*", "agent memory"),
    ("computer.*", "computer use by agents"),
    ("desktop.*", "desktop use by agents"),
    ("worker.*", "desktop workers of agents"),
    ("browser.request", "agent browser"),
    ("webSearch.*", "agent web search"),
    ("exec.*", "exec approvals of agent runs"),
    ("question.*", "questions asked by agent runs"),
    ("approval.*", "approvals of agent runs"),
    ("plugin.*", "plugins (we load none)"),
    ("plugins.*", "plugins (we load none)"),
    ("skills.*", "agent skills"),
    ("node.*", "nodes (we pair none)"),
    ("device.*", "device pairing (token auth only)"),
    ("attach.*", "device attachments"),
    ("push.*", "push notifications"),
    ("cron.*", "cron runs agents"),
    ("tasks.*", "agent tasks"),
    ("taskSuggestions.*", "agent tasks"),
    ("terminal.*", "terminals on the host"),
    ("environments.*", "agent environments"),
    ("worktrees.*", "agent worktrees"),
    ("fs.listDir", "host files"),
    ("projects.*", "agent projects"),
    ("artifacts.*", "agent artifacts"),
    ("board.*", "boards of agent runs"),
    ("canvas.*", "canvas documents of agent runs"),
    ("portal.*", "portals of agent runs"),
    ("progressCard.*", "progress cards of agent runs"),
    ("controlUi.*", "Control UI helpers backed by GitHub and agent runs"),
    ("github.*", "GitHub"),
    ("themes.*", "Control UI themes"),
    ("users.*", "multi-user identities"),
    ("mentions.*", "multi-user mentions"),
    ("secrets.*", "secrets of agent runs"),
    ("audit.*", "agent audit trail"),
    ("usage.*", "model usage and cost"),
    ("update.*", "OpenClaw's self-update"),
    ("gateway.*", "OpenClaw's Gateway lifecycle (suspend, restart, identity)"),
    ("ui.command", "Control UI commands"),
    ("claws.*", "claw packages"),
    ("hooks.status", "agent hooks"),
    ("commands.list", "agent commands"),
    ("diagnostics.*", "OpenClaw's runtime diagnostics"),
    ("system.info", "OpenClaw's runtime facts"),
    ("config.set", "config writes stay with `openclaw config`"),
    ("config.apply", "config writes stay with `openclaw config`"),
    ("config.patch", "config writes stay with `openclaw config`"),
    ("config.schema", "OpenClaw's config schema"),
    ("config.schema.lookup", "OpenClaw's config schema"),
)

# Events we send (the rest are the runtime's).
SERVED_EVENTS = frozenset(
    {"connect.challenge", "sessions.changed", "tick", "shutdown", "health", "presence", "session.operation"}
)  # `session.operation`: a compaction that runs the summariser (gateway/events.operation_start)
_REFUSED_EVENTS: tuple[tuple[str, str], ...] = (
    ("agent", "agent runs"),
    ("chat", "agent runs"),
    ("chat.metadata.changed", "agent runs"),
    ("models.snapshot", "models"),
    ("session.message", "live messages of agent runs"),
    ("session.tool", "agent runs"),
    ("session.approval", "agent runs"),
    ("session.typing", "channels"),
    ("session.observer", "multi-user sharing"),
    ("session.sharing", "multi-user sharing"),
    ("session.sharing.evidence", "multi-user sharing"),
    ("session.suggestion", "agent runs"),
    ("heartbeat", "agent heartbeats"),
    ("gateway.suspension", "OpenClaw's Gateway lifecycle"),
)


def _match(name: str, rules: tuple[tuple[str, str], ...]) -> str | None:
    for pattern, why in rules:
        if pattern == name or (pattern.endswith(".*") and name.startswith(pattern[:-1])):
            return why
    return None


def method_status(name: str) -> tuple[str, str]:
    """(served | refused-by-design | not yet, why) of one of OpenClaw's methods."""
    if name in METHODS:
        return SERVED, ""
    why = _match(name, _REFUSED)
    return (REFUSED, why) if why else (NOT_YET, "")


def event_status(name: str) -> tuple[str, str]:
    if name in SERVED_EVENTS:
        return SERVED, ""
    why = _match(name, _REFUSED_EVENTS) or _match(name, _REFUSED)
    return (REFUSED, why) if why else (NOT_YET, "")


_SESSION_PREFIXES = ("sessions.", "session.", "chat.", "transcripts.", "agents.")
_SESSION_NAMES = frozenset({"health", "status", "logs.tail", "system-presence", "config.get", "chat"})


def session_related(name: str) -> bool:
    """Is this method or event part of what a client does with sessions (issue 25's "Done when")?"""
    return name in _SESSION_NAMES or name.startswith(_SESSION_PREFIXES) or name == "presence"


def unserved_reason(name: str) -> str | None:
    """Why one of OpenClaw's methods is not served here (None: it is served, or OpenClaw has none)."""
    if name in METHODS or name not in _OPENCLAW_METHOD_SET:
        return None
    status, why = method_status(name)
    return why if status == REFUSED else "not served by openclaw-cli yet"


# Methods the real Gateway answers without listing them in hello-ok (recorded: reads-1/2.jsonl).
UNLISTED_METHODS: tuple[str, ...] = ("sessions.resolve", "sessions.get", "sessions.usage")
_OPENCLAW_METHOD_SET = frozenset(OPENCLAW_METHODS) | frozenset(UNLISTED_METHODS)
__all__ = [
    "OPENCLAW_EVENTS",
    "OPENCLAW_METHODS",
    "UNLISTED_METHODS",
    "event_status",
    "method_status",
    "unserved_reason",
]
