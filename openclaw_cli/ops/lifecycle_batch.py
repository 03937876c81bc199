"""The CLI's lifecycle batch (`run_batch`): OpenClaw's `sessions archive|delete` envelope
`{ok, error?, operation, dryRun, results:[{key, ok, status, archived?, error?}]}`, extended to
unarchive, pin, unpin, label, mark-read, mark-unread; each row runs the Gateway method
(`sessions.patch`, `sessions.delete`) locally or through a Gateway."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openclaw_cli.errors import (
    ExitCode,
    NotFoundError,
    OpenClawError,
    PreconditionError,
    StateOwnedError,
)
from openclaw_cli.ops.context import Context
from openclaw_cli.ops.lifecycle import NOT_FOUND_TEXT, is_main_session
from openclaw_cli.ops.session_keys import (
    list_hint,
    locate,
)

if TYPE_CHECKING:
    pass


# ---- the CLI's lifecycle batch (OpenClaw's `sessions archive|delete` envelope) -------------------------------

# operation -> (method, params added to {key, expectedSessionId}, status when done, dry-run status)
BATCH_OPERATIONS: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "archive": ("sessions.patch", {"archived": True}, "archived", "would_archive"),
    "unarchive": ("sessions.patch", {"archived": False}, "unarchived", "would_unarchive"),
    "pin": ("sessions.patch", {"pinned": True}, "pinned", "would_pin"),
    "unpin": ("sessions.patch", {"pinned": False}, "unpinned", "would_unpin"),
    "label": ("sessions.patch", {}, "labeled", "would_label"),
    "mark-read": ("sessions.patch", {"unread": False}, "marked_read", "would_mark_read"),
    "mark-unread": ("sessions.patch", {"unread": True}, "marked_unread", "would_mark_unread"),
    "delete": ("sessions.delete", {"deleteTranscript": True}, "deleted", "would_delete"),
}
CONFIRM_REQUIRED = "Deletion requires confirmation. Pass --yes to delete non-interactively."
NO_IDENTITY = "Session has no durable identity; lifecycle mutation was not attempted."

Invoke = Callable[[str, dict[str, Any], bool], dict[str, Any]]


@dataclass
class BatchRow:
    key: str
    session_id: str | None
    archived: bool
    is_main: bool
    agent_id: str | None = None
    pinned: bool = False


# refusals that leave nothing written, so a batch whose every key failed one way exits as the single
# command would: a database never written (7), a busy store (5), a full disk (11), a read-only
# filesystem or a denied permission (12), a process limit (13) — issue 29 #8: 11/12 on every store kind
_REFUSAL_CODES = frozenset(
    int(code)
    for code in (ExitCode.REFUSED, ExitCode.BUSY, ExitCode.NO_SPACE, ExitCode.PERMISSION, ExitCode.RESOURCE)
)


@dataclass
class Batch:
    operation: str
    dry_run: bool
    results: list[dict[str, Any]] = field(default_factory=list)
    confirmation_refused: bool = False
    cancelled: bool = False
    state_owned: str | None = None  # a Gateway owns the state (D25): the command's error and exit 5
    # exit codes of the typed errors that failed keys (a database we never write: 7, …)
    failure_codes: list[int] = field(default_factory=list)
    failure_types: list[str] = field(default_factory=list)  # their `error.type`s, in the same order

    def exit_code(self) -> int:
        """1 (OpenClaw's batch failure), or — when every failed key was refused the same way
        before anything was written (`_REFUSAL_CODES`) — that refusal's code, as the single-key
        commands exit."""
        failed = sum(1 for r in self.results if not r["ok"])
        codes = set(self.failure_codes)
        if failed and len(self.failure_codes) == failed and len(codes) == 1 and codes <= _REFUSAL_CODES:
            return codes.pop()
        if self.all_not_found():
            from openclaw_cli.errors import ExitCode

            return int(ExitCode.NOT_FOUND)  # as every single-key verb exits for an unknown key
        return 1

    def all_not_found(self) -> bool:
        failed = [r for r in self.results if not r["ok"]]
        return bool(failed) and all(r["status"] == "not_found" for r in failed)

    def document(self) -> dict[str, Any]:
        ok = all(r["ok"] for r in self.results)
        out: dict[str, Any] = {"ok": ok}
        if not ok and self.state_owned is not None:
            out["error"] = {"type": "state_owned", "message": self.state_owned}
        elif self.all_not_found():
            missing = [r["key"] for r in self.results if r["status"] == "not_found"]
            out["error"] = {
                "type": "not_found",
                "message": f"Session not found: {', '.join(missing)}. Run "
                "openclaw sessions list --json to choose a valid key.",
            }
        elif not ok and self.exit_code() in _REFUSAL_CODES and len(set(self.failure_types)) == 1:
            # every failed key refused one way (a full disk, a read-only filesystem, …): the
            # document says which, as the single-key command's does (issue 29 #8)
            messages = [r["error"] for r in self.results if not r["ok"]]
            message = (
                messages[0]
                if len(set(messages)) == 1
                else (f"Session {self.operation} did not complete for every requested key: {messages[0]}")
            )
            out["error"] = {"type": self.failure_types[0], "message": message}
        elif not ok:
            out["error"] = {
                "type": "cli_error",
                "message": f"Session {self.operation} did not complete for every requested key.",
            }
        out.update(operation=self.operation, dryRun=self.dry_run, results=self.results)
        return out


def not_found_result(key: str, agent: str | None) -> dict[str, Any]:
    return {
        "key": key,
        "ok": False,
        "status": "not_found",
        "error": NOT_FOUND_TEXT.format(hint=list_hint(agent)),
    }


def lookup_rows(
    ctx: Context, keys: list[str], *, agent: str | None, store: str | None
) -> dict[str, BatchRow | OpenClawError]:
    """key -> its row (read-only, from the local store), or the error that prevented the lookup
    (another agent's key, an unknown agent, …). Missing keys are absent."""
    from openclaw_cli.keys import derive_row_flags

    out: dict[str, BatchRow | OpenClawError] = {}
    for key in keys:
        try:
            loc = locate(ctx, key, agent=agent, store=store, read_only=True)
        except NotFoundError:
            continue
        except OpenClawError as exc:
            out[key] = exc
            continue
        with loc.store:
            if loc.entry is None:
                continue
            sid = loc.entry.get("sessionId")
            flags = derive_row_flags(loc.entry, loc.key)
            out[key] = BatchRow(
                loc.key,
                sid if isinstance(sid, str) and sid else None,
                flags["archived"],
                is_main_session(ctx, loc.agent_id, loc.key),
                loc.agent_id,
                flags["pinned"],
            )
    return out


def rows_from_listing(
    ctx: Context, keys: list[str], sessions: list[dict[str, Any]]
) -> dict[str, BatchRow | OpenClawError]:
    """The batch rows of a Gateway `sessions.list` page (`archived: "all"`)."""
    from openclaw_cli.keys import parse_agent_key

    by_key = {row.get("key"): row for row in sessions if isinstance(row, dict)}
    out: dict[str, BatchRow | OpenClawError] = {}
    for key in keys:
        row = by_key.get(key)
        if row is None:
            continue
        agent_id = row.get("agentId") or (parse_agent_key(key) or (None,))[0]
        is_main = (
            row.get("isMain") is True
            if "isMain" in row
            else (agent_id is not None and is_main_session(ctx, agent_id, key))
        )
        sid = row.get("sessionId")
        out[key] = BatchRow(
            key,
            sid if isinstance(sid, str) and sid else None,
            row.get("archived") is True,
            bool(is_main),
            agent_id,
            row.get("pinned") is True,
        )
    return out


def run_batch(
    ctx: Context,
    operation: str,
    keys: list[str],
    *,
    agent: str | None,
    store: str | None,
    dry_run: bool,
    rows: dict[str, BatchRow | OpenClawError],
    invoke: Invoke,
    label: str | None = None,
    archived_only: bool = False,
    confirm: Callable[[int], str] | None = None,
) -> Batch:
    """One lifecycle command over `keys` (OpenClaw's `runSessionsLifecycleCommand`): each key's
    result, `not_found` for keys without a row, `failed` with the error text otherwise. `rows`
    comes from `lookup_rows` (local) or `rows_from_listing` (Gateway); `invoke(method, params,
    dry_run)` runs a method locally or through the Gateway. `confirm(n)` (delete without --yes)
    answers "yes", "no" or "refuse" (no terminal)."""
    method, extra, done_status, dry_status = BATCH_OPERATIONS[operation]
    batch = Batch(operation, dry_run)
    results: list[dict[str, Any] | None] = []
    targets: list[tuple[int, BatchRow]] = []
    for key in keys:
        row = rows.get(key)
        if row is None:
            results.append(not_found_result(key, agent))
        elif isinstance(row, OpenClawError):
            results.append({"key": key, "ok": False, "status": "failed", "error": row.message})
            batch.failure_codes.append(int(row.exit_code))
            batch.failure_types.append(row.type)
        elif row.session_id is None and not (operation == "archive" and row.archived):
            results.append({"key": row.key, "ok": False, "status": "failed", "error": NO_IDENTITY})
        else:
            results.append(None)
            targets.append((len(results) - 1, row))
    if operation == "delete" and not dry_run and targets and confirm is not None:
        answer = confirm(len(targets))
        if answer == "refuse":
            for index, row in targets:
                results[index] = {"key": row.key, "ok": False, "status": "failed", "error": CONFIRM_REQUIRED}
            batch.results = [r for r in results if r is not None]
            batch.confirmation_refused = True
            return batch
        if answer == "no":
            batch.cancelled = True
            return batch
    for index, row in targets:
        if operation == "archive" and row.archived:
            results[index] = {"key": row.key, "ok": True, "status": "already_archived"}
            continue
        if operation == "unarchive" and not row.archived:
            results[index] = {"key": row.key, "ok": True, "status": "not_archived"}
            continue
        if operation == "pin" and row.pinned and not dry_run:
            results[index] = {"key": row.key, "ok": True, "status": "already_pinned"}
            continue
        params: dict[str, Any] = {"key": row.key}
        if agent:
            params["agentId"] = agent
        if row.session_id:
            params["expectedSessionId"] = row.session_id
        params.update(extra)
        if operation == "label":
            params["label"] = label
        if operation == "delete" and (row.archived or archived_only):
            params["archivedOnly"] = True
        if store is not None:
            params["store"] = store
        try:
            if operation == "delete" and dry_run:
                _dry_delete_check(ctx, row, archived_only)
                results[index] = {"key": row.key, "ok": True, "status": dry_status}
                continue
            doc = invoke(method, {**params, **({"dryRun": True} if dry_run else {})}, dry_run)
            results[index] = _batch_result(
                operation, row, doc, done_status, dry_status, dry_run, label, agent
            )
        except OpenClawError as exc:
            results[index] = {"key": row.key, "ok": False, "status": "failed", "error": exc.message}
            if isinstance(exc, StateOwnedError):
                batch.state_owned = exc.message
            batch.failure_codes.append(int(exc.exit_code))
            batch.failure_types.append(exc.type)
    batch.results = [r for r in results if r is not None]
    return batch


def _dry_delete_check(ctx: Context, row: BatchRow, archived_only: bool) -> None:
    if row.is_main:
        raise PreconditionError(f"Cannot delete the main session ({row.key}).")
    if archived_only and not row.archived:
        raise PreconditionError(f"Session {row.key} is not archived. Archive it first, then delete it.")


def _batch_result(
    operation: str,
    row: BatchRow,
    doc: dict[str, Any],
    done: str,
    dry: str,
    dry_run: bool,
    label: str | None,
    agent: str | None,
) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("ok") is not True:
        raise PreconditionError("Gateway did not confirm the session change.")
    key = doc.get("key") or row.key
    if operation == "delete":
        if not doc.get("deleted"):
            return not_found_result(row.key, agent)
        result = {"key": key, "ok": True, "status": "deleted", "archived": list(doc.get("archived") or [])}
        if doc.get("warnings"):
            result["warnings"] = list(doc["warnings"])
        return result
    entry: dict[str, Any] = doc["entry"] if isinstance(doc.get("entry"), dict) else {}
    if operation == "archive" and not dry_run and entry.get("archivedAt") is None:
        raise PreconditionError("Gateway did not confirm that the session was archived.")
    status = dry if dry_run else done
    if operation == "label" and label is None:
        status = "would_clear_label" if dry_run else "label_cleared"
    return {"key": key, "ok": True, "status": status}
