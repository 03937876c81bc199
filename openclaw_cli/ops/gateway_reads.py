"""Reads OpenClaw's own clients ask a session Gateway for (issue 25), answered as OpenClaw 2026.9.6
answers them (recorded: tests/fixtures/gateway-2026.9.6-issue25):

* `sessions.resolve`: one selector of key / sessionId / label / shortId / reference to
  `{ok: true, key, agentId}`; `allowMissing` turns "No session found" into `{ok: false}`;
* `system-presence`: this Gateway's own presence entry (no other instance reports to it);
* `logs.tail`: a byte window of our log file with OpenClaw's cursor paging;
* `config.get`: the config file, secrets redacted as OpenClaw redacts them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import uuid
from pathlib import Path
from typing import Any

from openclaw_cli.errors import PreconditionError
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.session_keys import owner_agent

# ---- sessions.resolve --------------------------------------------------------------------------------------

_SHORT_ID = re.compile(r"^[0-9a-fA-F]{8,32}$")
_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")
_SELECTORS = "key, sessionId, label, shortId, or reference"


class _Missing(Exception):
    pass


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _agents(ctx: Context, agent_id: str | None) -> list[str]:
    from openclaw_cli.ids import normalize_agent_id
    from openclaw_cli.ops.targets import known_agent_ids

    return [normalize_agent_id(agent_id)] if agent_id else known_agent_ids(ctx.paths, ctx.config)


def _entries(ctx: Context, agent_id: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    """(agent, key, entry) of every stored session of the selected agents, newest first."""
    from openclaw_cli.ops.targets import open_existing

    rows: list[tuple[str, str, dict[str, Any]]] = []
    for agent in _agents(ctx, agent_id):
        store = open_existing(ctx, agent)
        if store is None:
            continue
        with store:
            found, _total = store.list_entries()
            rows.extend((agent, key, entry) for key, entry in found)
    rows.sort(
        key=lambda row: (
            -(row[2].get("updatedAt") or 0) if isinstance(row[2].get("updatedAt"), int | float) else 0
        )
    )
    return rows


def _by_key(ctx: Context, key: str, agent_id: str | None) -> dict[str, Any]:
    from openclaw_cli.ops.session_keys import find_session

    found = find_session(ctx, key, agent_id)
    if found is None:
        raise _Missing(f"No session found: {key}")
    agent, store, stored, _entry = found
    store.close()
    return {"ok": True, "key": stored, "agentId": agent}


def _by_session_id(ctx: Context, session_id: str, agent_id: str | None) -> dict[str, Any]:
    matches = [
        (agent, key) for agent, key, entry in _entries(ctx, agent_id) if entry.get("sessionId") == session_id
    ]
    if not matches:
        raise _Missing(f"No session found: {session_id}")
    if len(matches) > 1:
        listed = ", ".join(f"{agent}:{key}" if not agent_id else key for agent, key in matches)
        raise PreconditionError(f"Multiple sessions found for sessionId: {session_id} ({listed})")
    agent, key = matches[0]
    return {"ok": True, "key": key, "agentId": agent}


def _by_label(ctx: Context, label: str, agent_id: str | None) -> dict[str, Any]:
    matches = [(agent, key) for agent, key, entry in _entries(ctx, agent_id) if entry.get("label") == label]
    if not matches:
        raise _Missing(f"No session found with label: {label}")
    if len(matches) > 1:
        keys = ", ".join(key for _agent, key in matches[:2])
        raise PreconditionError(f"Multiple sessions found with label: {label} ({keys})")
    agent, key = matches[0]
    return {"ok": True, "key": key, "agentId": agent}


def _candidate(agent: str, key: str, entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "agentId": agent}
    name = entry.get("displayName") or entry.get("label")
    if isinstance(name, str) and name:
        out["displayName"] = name
    return out


def _by_short_id(ctx: Context, raw: str, agent_id: str | None) -> dict[str, Any]:
    if not _SHORT_ID.match(raw):
        raise PreconditionError("shortId must be 8-32 hexadecimal characters")
    short = raw.lower()
    matches = []
    for agent, key, entry in _entries(ctx, agent_id):
        tail = _UUID_TAIL.search(key)
        if tail and tail.group(1).lower().replace("-", "").startswith(short):
            matches.append(_candidate(agent, key, entry))
    if not matches:
        raise _Missing(f"No session found: {short}")
    if len(matches) > 1:
        return {"ok": True, "ambiguous": True, "candidates": matches[:10]}
    return {"ok": True, **matches[0]}


def sessions_resolve(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    agent_id = _text(params.get("agentId")) or None
    reference = params.get("reference")
    key, session_id = _text(params.get("key")), _text(params.get("sessionId"))
    label, short_id = _text(params.get("label")), _text(params.get("shortId"))
    chosen = {
        "key": key,
        "sessionId": session_id,
        "label": label,
        "shortId": short_id,
        "reference": reference,
    }
    if "slugHint" in params and not short_id:
        raise PreconditionError("slugHint requires shortId")
    given = [name for name, value in chosen.items() if value]
    if len(given) > 1:
        raise PreconditionError(f"Provide either {_SELECTORS} (not multiple)")
    if not given:
        raise PreconditionError(f"Either {_SELECTORS} is required")
    try:
        if isinstance(reference, dict):
            return _by_key(ctx, _text(reference.get("key")), agent_id)
        if key:
            return _by_key(ctx, key, agent_id)
        if session_id:
            return _by_session_id(ctx, session_id, agent_id)
        if short_id:
            return _by_short_id(ctx, short_id, agent_id)
        return _by_label(ctx, label, agent_id)
    except _Missing as missing:
        if params.get("allowMissing") is True:  # OpenClaw 2026.9.6 answers `{ok: false}` (peer test)
            return {"ok": False}
        raise PreconditionError(str(missing)) from None


# ---- sessions.get ------------------------------------------------------------------------------------------


def sessions_get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """`sessions.get` (served by OpenClaw unlisted, params unchecked): the last `limit` (default
    200) messages of a session, as `chat.history` renders them but uncut; `{messages: []}` for an
    unknown key."""
    from openclaw_cli.ops.history import chat_history

    key = _text(params.get("key")) or _text(params.get("sessionKey"))
    if not key:
        raise PreconditionError("key required")
    agent_id = _text(params.get("agentId")) or None
    owner_agent(ctx, key, agent_id, None)
    raw = params.get("limit")
    limit = max(1, int(raw)) if isinstance(raw, int | float) and not isinstance(raw, bool) else 200
    history = chat_history(
        ctx,
        {
            "sessionKey": key,
            **({"agentId": agent_id} if agent_id else {}),
            "limit": limit,
            "maxChars": 1 << 62,
        },
        with_session=False,
        cap_messages=False,
    )
    return {"messages": history["messages"]}


# ---- sessions.storage.status ------------------------------------------------------------------------


def _bytes(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def sessions_storage_status(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's transcript storage figures per agent: the agent's database and WAL sizes and its
    session transcripts (all hot: we move none to cold storage, so the cold figures are 0), and an
    idle maintenance record (we run no cold-storage maintenance)."""
    from openclaw_cli.ops.targets import known_agent_ids, open_existing

    agents = []
    for agent in known_agent_ids(ctx.paths, ctx.config):
        db = Path(ctx.paths.agent_db_path(agent))
        hot = 0
        store = open_existing(ctx, agent)
        if store is not None:
            with store:
                hot = sum(1 for entry in store.load_entries().values() if entry.get("sessionId"))
        agents.append(
            {
                "agentId": agent,
                "storePath": str(db),
                "hotTranscripts": hot,
                "coldTranscripts": 0,
                "embeddedArchiveBytes": 0,
                "databaseBytes": _bytes(db),
                "walBytes": _bytes(db.with_name(db.name + "-wal")),
                "archiveBytes": 0,
            }
        )
    maintenance = {
        "running": False,
        "lastStartedAt": None,
        "lastCompletedAt": None,
        "lastError": None,
        "archivedTranscripts": 0,
        "externalizedTranscripts": 0,
    }
    return {"agents": agents, "maintenance": maintenance}


# ---- system-presence -------------------------------------------------------------------------------------------


def _host_ip() -> str | None:
    """The address other hosts would reach this one at (no packet is sent: a UDP connect only
    picks the route), None when there is no route."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            address: str = probe.getsockname()[0]
            return address
    except OSError:
        return None


def system_presence(ctx: Context, params: dict[str, Any]) -> list[dict[str, Any]]:
    """This Gateway's own presence entry, as OpenClaw's Gateway reports itself (`reason: "self"`),
    then its connected clients'."""
    from openclaw_cli import __version__

    host = socket.gethostname()
    ip = _host_ip()
    system = platform.system()
    entry: dict[str, Any] = {"host": host}
    if ip:
        entry["ip"] = ip
    entry.update(
        {
            "version": __version__,
            "platform": f"{system.lower()} {platform.release()}",
            "deviceFamily": {"Darwin": "Mac", "Windows": "Windows"}.get(system, system),
            "mode": "gateway",
            "reason": "self",
            "instanceId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"openclaw-cli:{host}:{ctx.paths.state_dir}")),
            "text": f"Gateway: {host}{f' ({ip})' if ip else ''} · app {__version__} · mode gateway · reason self",
            "ts": ctx.now_ms(),
        }
    )
    # then the clients connected to the serving Gateway, newest first (`gateway/presence.py`)
    return [entry, *(ctx.gateway_presence() if ctx.gateway_presence is not None else [])]


# ---- logs.tail ---------------------------------------------------------------------------------------------

LOG_DEFAULT_LIMIT = 500
LOG_DEFAULT_MAX_BYTES = 250_000


def log_file(ctx: Context) -> Path:
    """Our Gateway's log file: the config's `logging.file`, else `<state dir>/logs/gateway.log`."""
    raw = getattr(ctx.config, "raw", None) or {}
    section = raw.get("logging") if isinstance(raw, dict) else None
    configured = section.get("file") if isinstance(section, dict) else None
    if isinstance(configured, str) and configured.strip():
        return Path(os.path.expanduser(configured.strip()))
    return Path(ctx.paths.state_dir) / "logs" / "gateway.log"


def logs_tail(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's cursor paging: without a cursor the last `maxBytes` of the file; with one, what
    was appended since (a cursor past the end, or further back than `maxBytes`, resets to the
    last `maxBytes`: `reset`, `skippedBytes`); a partial first line is dropped, at most `limit`
    lines (the newest: `truncated`), and the next cursor ends at the last whole line."""
    path = log_file(ctx)
    limit = params.get("limit", LOG_DEFAULT_LIMIT)
    max_bytes = params.get("maxBytes", LOG_DEFAULT_MAX_BYTES)
    cursor = params.get("cursor")
    try:
        size = path.stat().st_size
    except OSError:
        return {
            "file": str(path),
            "cursor": 0,
            "size": 0,
            "lines": [],
            "truncated": False,
            "reset": bool(cursor),
        }
    reset = truncated = False
    skipped: int | None = None
    if cursor is None:
        start = max(0, size - max_bytes)
        truncated = start > 0
    elif cursor > size:
        reset = True
        start = max(0, size - max_bytes)
        truncated = start > 0
    else:
        start = cursor
        if size - start > max_bytes:
            reset = truncated = True
            skipped = max(0, size - max_bytes) - start
            start = max(0, size - max_bytes)
    out: dict[str, Any] = {"file": str(path)}
    if size <= start:
        out.update({"cursor": size, "size": size, "lines": [], "truncated": truncated, "reset": reset})
    else:
        with path.open("rb") as handle:
            whole_line = True
            if start > 0:
                handle.seek(start - 1)
                whole_line = handle.read(1) == b"\n"
            data = handle.read(size - start)
        pieces = data.split(b"\n")
        pieces.pop()  # after the last newline: an unfinished line, read again next time
        if start > 0 and not whole_line and pieces:
            pieces.pop(0)
        if len(pieces) > limit:
            truncated = True
            pieces = pieces[-limit:]
        last = data.rfind(b"\n")
        lines = [piece.decode("utf-8", "replace") for piece in pieces]
        out.update(
            {"cursor": start + last + 1, "size": size, "lines": lines, "truncated": truncated, "reset": reset}
        )
    if skipped is not None:
        out["skippedBytes"] = skipped
    return out


# ---- config.get ---------------------------------------------------------------------------------------------

REDACTED = "__OPENCLAW_REDACTED__"
_SECRET_KEY = re.compile(r"(token|password|secret|apikey|api_key|privatekey|credential|passphrase)$", re.I)


def redact_config(value: Any) -> Any:
    """Every string under a secret-named key replaced by OpenClaw's redaction sentinel."""
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(v, str) and _SECRET_KEY.search(k) else redact_config(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_config(v) for v in value]
    return value


def config_get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """The config file as OpenClaw's `config.get` reports it: path, whether it exists, the raw
    text and the parsed object (secrets redacted in both), validity and a content hash. We apply
    no runtime defaults, so `resolved` and `config` are the file as written."""
    from openclaw_cli.config.loader import parse_config_bytes, read_config_bytes

    path = Path(ctx.paths.config_path)
    data = read_config_bytes(path)
    out: dict[str, Any] = {"path": str(path), "exists": data is not None}
    if data is None:
        parsed: dict[str, Any] = {}
        out.update({"raw": None, "parsed": {}, "valid": True})
    else:
        parsed = redact_config(parse_config_bytes(data, path))
        out.update({"raw": json.dumps(parsed), "parsed": parsed, "valid": True})
    out.update(
        {
            "sourceConfig": parsed,
            "resolved": parsed,
            "config": parsed,
            "hash": "sha256:" + hashlib.sha256(data or b"").hexdigest(),
            "issues": [],
            "warnings": [],
            "legacyIssues": [],
        }
    )
    return out


# ---- chat.metadata ---------------------------------------------------------------------------------


def _raw_config(ctx: Context) -> dict[str, Any]:
    raw = getattr(ctx.config, "raw", None)
    return raw if isinstance(raw, dict) else {}


def _swarm_enabled(ctx: Context, agent_id: str) -> bool:
    """`tools.swarm.enabled` of the agent's entry, else of the config, else on (OpenClaw's default)."""
    raw = _raw_config(ctx)
    agents = raw.get("agents")
    entries = agents.get("entries") if isinstance(agents, dict) else None
    entry = entries.get(agent_id) if isinstance(entries, dict) else None
    for scope in (entry, raw):
        tools = scope.get("tools") if isinstance(scope, dict) else None
        swarm = tools.get("swarm") if isinstance(tools, dict) else None
        if isinstance(swarm, dict) and isinstance(swarm.get("enabled"), bool):
            return bool(swarm["enabled"])
    return True


def _requested_agent(ctx: Context, agent_id: str | None) -> str:
    """The agent a request without a session names: `agentId` (a configured one), else the only
    agent; OpenClaw's texts for an unknown agent and for several agents without a choice."""
    from openclaw_cli.config import configured_agent_ids
    from openclaw_cli.ids import normalize_agent_id

    configured = configured_agent_ids(ctx.config)
    if agent_id:
        wanted = normalize_agent_id(agent_id)
        if wanted not in configured:
            raise PreconditionError(f'unknown agent id "{agent_id.strip()}"')
        return wanted
    if len(configured) > 1:
        raise PreconditionError(
            "Multiple agents are configured, but this Gateway request has no explicit owner. "
            "Set agentId to one of the configured agents."
        )
    return configured[0]


def chat_metadata(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """What a chat composer offers for one agent or session: its models and slash commands, whether
    swarms are on and how the model account is chosen. Our Gateway runs no agent and no model, so
    it offers neither models nor commands (a command is run by an agent: `chat.send`, which we
    refuse); the shape, the owner rules and their errors are OpenClaw's."""
    from openclaw_cli.keys import parse_agent_key

    key = params.get("sessionKey")
    agent_id = params.get("agentId")
    if isinstance(key, str):
        from openclaw_cli.ids import normalize_agent_id

        parsed = parse_agent_key(key)
        if parsed and agent_id and normalize_agent_id(agent_id) != parsed[0]:
            raise PreconditionError(
                f'agent "{agent_id.strip()}" does not match session key agent "{parsed[0]}"'
            )
        owner_agent(ctx, key, agent_id, None)
        agent = parsed[0] if parsed else _requested_agent(ctx, agent_id)
    else:
        agent = _requested_agent(ctx, agent_id)
        if params.get("authProfileId") is not None:  # a user's own model account: we hold no users
            from openclaw_cli.errors import ForbiddenError

            raise ForbiddenError(
                "This account action requires a current authorized connection; reconnect and try again."
            )
    return {
        "models": [],
        "commands": [],
        "swarmEnabled": _swarm_enabled(ctx, agent),
        "accountSelection": {"kind": "automatic", "label": "Automatic account selection"},
    }
