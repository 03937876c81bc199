"""Session lifecycle commands on `openclaw sessions`: archive, unarchive, pin, unpin, label,
mark-read, mark-unread, reset, fork, delete, export (operations: `ops.lifecycle`).

Every mutation goes through `cli.delegation.delegate` first (spec D9, D20): a reachable Gateway
serves it; when nothing listens it runs locally (and says so); `--store` and `--dry-run` always
run locally. Lifecycle patches carry `expectedSessionId` from the row just read — through the
Gateway's `sessions.list` when one answers, as the real CLI does, else from the local store.
Multi-key commands print OpenClaw's envelope `{ok, error?, operation, dryRun, results}` and exit 1
when any key failed; `delete` without `--yes` asks on a terminal and refuses (exit 2) otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from openclaw_cli.cli.common import echo_json, run
from openclaw_cli.cli.delegation import GATEWAY_PASSWORD, GATEWAY_TIMEOUT, GATEWAY_TOKEN, GATEWAY_URL
from openclaw_cli.cli.store_options import NO_BACKUP

if TYPE_CHECKING:
    from collections.abc import Callable

    from openclaw_cli.cli.delegation import GatewayOptions
    from openclaw_cli.ops.context import Context


def _complete_key(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import session_keys

    return session_keys(ctx, incomplete)


def _complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    from openclaw_cli.cli.completion import agent_ids

    return agent_ids(ctx, incomplete)


KEYS = typer.Argument(
    ...,
    help="Session keys (see openclaw sessions list --json).",
    show_default=False,
    autocompletion=_complete_key,
)
KEY = typer.Argument(
    ...,
    help="The session key (see openclaw sessions list --json).",
    show_default=False,
    autocompletion=_complete_key,
)
AGENT = typer.Option(
    None,
    "--agent",
    metavar="<id>",
    autocompletion=_complete_agent,
    help="The agent whose store holds the sessions (default: the key's agent).",
)
STORE = typer.Option(
    None,
    "--store",
    metavar="<path>",
    help="An explicit store (offline repair): a legacy sessions.json or an agent .sqlite.",
)
JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
DRY_RUN = typer.Option(False, "--dry-run", help="Check and show what would change; write nothing.")
LIST_PAGE = 200

_TEXT = {
    "archived": "Archived session {key}.",
    "already_archived": "Session {key} is already archived.",
    "unarchived": "Restored session {key} from the archive.",
    "not_archived": "Session {key} is not archived.",
    "pinned": "Pinned session {key}.",
    "already_pinned": "Session {key} is already pinned.",
    "unpinned": "Unpinned session {key}.",
    "labeled": "Labelled session {key}.",
    "label_cleared": "Cleared the label of session {key}.",
    "marked_read": "Marked session {key} as read.",
    "marked_unread": "Marked session {key} as unread.",
    "deleted": "Deleted session {key}.",
    "would_archive": "[dry-run] archive session {key}",
    "would_unarchive": "[dry-run] unarchive session {key}",
    "would_pin": "[dry-run] pin session {key}",
    "would_unpin": "[dry-run] unpin session {key}",
    "would_label": "[dry-run] label session {key}",
    "would_clear_label": "[dry-run] clear the label of session {key}",
    "would_mark_read": "[dry-run] mark session {key} as read",
    "would_mark_unread": "[dry-run] mark session {key} as unread",
    "would_delete": "[dry-run] delete session {key} (its transcript is archived first)",
}


def _parent(ctx: typer.Context) -> dict[str, Any]:
    return ctx.parent.obj if ctx.parent is not None and isinstance(ctx.parent.obj, dict) else {}


def _gateway_options(
    url: str | None, token: str | None, password: str | None, timeout: str | None
) -> GatewayOptions:
    from openclaw_cli.cli.delegation import gateway_options

    return gateway_options(url, token, password, timeout)


class Runner:
    """Runs methods for one command: locally for dry runs and `--store`, else through the Gateway
    when one answers (`delegate`), else locally. The fallback hint is said once, on stderr, and
    only when a mutation then ran locally (a row lookup that found nothing listening says nothing,
    and neither does a local run that failed: it wrote nothing)."""

    def __init__(self, cx: Any, store: str | None, gateway: Any):
        self.cx = cx
        self.store = store
        self.gateway = gateway
        self.remote: bool | None = None  # whether the last delegation was answered (None: not asked yet)
        self._hinted = False
        self._fallback: str | None = None

    def _note(self, text: str) -> None:
        self._fallback = text

    def _say(self, text: str) -> None:
        if not self._hinted:
            self._hinted = True
            from openclaw_cli.cli.common import say_hints

            say_hints([text])

    def delegated(self, method: str, params: dict[str, Any], *, read: bool = False) -> dict[str, Any] | None:
        if self.store is not None:
            return None
        from openclaw_cli.cli.delegation import delegate

        doc = delegate(
            method,
            params,
            self.gateway,
            paths=self.cx.paths,
            config=self.cx.config,
            hint=(lambda text: None) if read else self._note,
        )
        self.remote = doc is not None
        return doc

    def invoke(self, method: str, params: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        from openclaw_cli.ops.methods import call

        if not dry_run:
            remote = self.delegated(method, params)
            if remote is not None:
                return remote
        else:
            from openclaw_cli.cli.delegation import follow_owner

            follow_owner(self.cx, self.gateway, dry_run=True, store=self.store)  # D23
        doc = call(self.cx, method, params)
        if self._fallback is not None:
            self._say(self._fallback)
        return doc

    def rows(self, keys: list[str], agent: str | None, dry_run: bool) -> dict[str, Any]:
        """The rows of `keys`: the Gateway's listing when one answers (not for dry runs), else
        the local store."""
        from openclaw_cli.ops.lifecycle_batch import lookup_rows, rows_from_listing

        if not dry_run and self.store is None:
            sessions = self._listing(keys, agent)
            if sessions is not None:
                return rows_from_listing(self.cx, keys, sessions)
        return lookup_rows(self.cx, keys, agent=agent, store=self.store)

    def _listing(self, keys: list[str], agent: str | None) -> list[dict[str, Any]] | None:
        from openclaw_cli.errors import GatewayError

        found: list[dict[str, Any]] = []
        wanted, offset = set(keys), 0
        for _ in range(10_000):  # bounded: a Gateway that pages forever is an error below
            params: dict[str, Any] = {
                "limit": LIST_PAGE,
                "archived": "all",
                "includeGlobal": True,
                "includeUnknown": True,
                "configuredAgentsOnly": True,
            }
            if offset:
                params["offset"] = offset
            if agent:
                params["agentId"] = agent
            page = self.delegated("sessions.list", params, read=True)
            if page is None:
                return None
            rows = page.get("sessions") if isinstance(page, dict) else None
            if not isinstance(rows, list):
                raise GatewayError("Gateway returned an invalid sessions.list response.")
            found.extend(row for row in rows if isinstance(row, dict) and row.get("key") in wanted)
            if {row.get("key") for row in found} >= wanted or page.get("hasMore") is not True:
                return found
            next_offset = page.get("nextOffset")
            if not isinstance(next_offset, int) or next_offset <= offset:
                raise GatewayError("Gateway returned invalid sessions.list pagination.")
            offset = next_offset
        raise GatewayError("Gateway returned invalid sessions.list pagination.")


def _context(no_backup: bool = False) -> Context:
    from openclaw_cli.cli.common import load_context

    return load_context(backup=not no_backup)


def _hints(cx: Any, json_mode: bool, doc: dict[str, Any] | None = None) -> None:
    if json_mode:
        if doc is not None and cx.hints and "hint" not in doc:
            doc["hint"] = " ".join(cx.hints)
        return
    from openclaw_cli.cli.common import say_hints

    say_hints(cx.hints)


def _confirm(json_mode: bool) -> Callable[[int], str]:
    import sys

    def ask(count: int) -> str:
        if json_mode or not sys.stdin.isatty():
            return "refuse"
        noun = "session" if count == 1 else "sessions"
        return (
            "yes"
            if typer.confirm(
                f"Delete {count} {noun}? Their transcripts are archived first.", default=False, err=True
            )
            else "no"
        )

    return ask


def batch_command(
    operation: str,
    keys: list[str],
    *,
    agent: str | None,
    store: str | None,
    dry_run: bool,
    json_mode: bool,
    gateway: tuple[str | None, str | None, str | None, str | None],
    label: str | None = None,
    yes: bool = False,
    archived_only: bool = False,
    no_backup: bool = False,
) -> None:
    def body() -> None:
        from openclaw_cli.errors import ExitCode
        from openclaw_cli.lifecycle import check_session_key
        from openclaw_cli.ops.lifecycle_batch import run_batch

        wanted = [check_session_key(k) for k in keys]  # a hostile key fails the command before anything
        cx = _context(no_backup)
        runner = Runner(cx, store, _gateway_options(*gateway))
        rows = runner.rows(list(dict.fromkeys(wanted)), agent, dry_run)
        confirm = None if yes or dry_run else _confirm(json_mode)
        batch = run_batch(
            cx,
            operation,
            wanted,
            agent=agent,
            store=store,
            dry_run=dry_run,
            rows=rows,
            invoke=runner.invoke,
            label=label,
            archived_only=archived_only,
            confirm=confirm,
        )
        if batch.cancelled:
            from openclaw_cli.output import err

            err("Cancelled.")
            return
        doc = batch.document()
        if json_mode:
            _hints(cx, True, doc)
            echo_json(doc)
        else:
            _render_batch(doc)
            _hints(cx, False)
        if batch.confirmation_refused:
            if not json_mode:
                from openclaw_cli.output import err

                err("Error: refusing to delete without confirmation: pass --yes (no terminal to ask on).")
            raise typer.Exit(int(ExitCode.USAGE))
        if not doc["ok"]:
            raise typer.Exit(int(ExitCode.BUSY) if batch.state_owned is not None else batch.exit_code())

    run(body, json_mode=json_mode)


def _render_batch(doc: dict[str, Any]) -> None:
    from openclaw_cli.output import err, out, sanitize_text

    for result in doc["results"]:
        key = sanitize_text(result["key"])
        status = result["status"]
        if status in ("not_found", "failed"):
            err(f"{doc['operation']} {key}: {sanitize_text(result.get('error') or 'Unknown failure.')}")
            continue
        out(_TEXT.get(status, f"{status} {{key}}").format(key=key))
        for path in result.get("archived") or []:
            out(f"Archived transcript: {sanitize_text(path)}")
        for warning in result.get("warnings") or []:
            err(f"Warning: {sanitize_text(warning)}")


def _single(
    method: str,
    params: dict[str, Any],
    *,
    store: str | None,
    dry_run: bool,
    gateway: tuple[str | None, str | None, str | None, str | None],
    expect_row: bool,
    render: Any,
    json_mode: bool,
    precheck: Any = None,
    no_backup: bool = False,
) -> None:
    def body() -> None:
        from openclaw_cli.errors import NotFoundError
        from openclaw_cli.lifecycle import check_session_key
        from openclaw_cli.ops.lifecycle_batch import BatchRow
        from openclaw_cli.ops.session_keys import list_hint

        if precheck is not None:
            precheck()

        key_field = "key" if "key" in params else "parentSessionKey"
        params[key_field] = check_session_key(params[key_field])
        cx = _context(no_backup)
        runner = Runner(cx, store, _gateway_options(*gateway))
        agent = params.get("agentId")
        if expect_row:
            row = runner.rows([params[key_field]], agent, dry_run).get(params[key_field])
            if row is None and method == "sessions.reset":
                pass  # the method decides, as the store's release does: 2026.9.6+ creates the row
            elif row is None:
                raise NotFoundError(
                    f"Session not found: {params[key_field]}. Run {list_hint(agent)} to choose a valid key."
                )
            elif not isinstance(row, BatchRow):
                raise row  # the lookup's own error (another agent's key, no owner, …)
            else:
                params[key_field] = row.key
                if row.session_id:
                    params["expectedSessionId"] = row.session_id
        if store is not None:
            params["store"] = store
        if dry_run:
            params["dryRun"] = True
        doc = runner.invoke(method, params, dry_run)
        if json_mode:
            _hints(cx, True, doc)
            echo_json(doc)
        else:
            render(doc)
            _hints(cx, False)

    run(body, json_mode=json_mode)


def _render_reset(doc: dict[str, Any]) -> None:
    from openclaw_cli.output import out, sanitize_text

    prefix = "[dry-run] would reset" if doc.get("dryRun") else "Reset"
    key, sid = sanitize_text(doc.get("key")), sanitize_text(doc.get("sessionId"))
    if doc.get("created"):
        out(f"{prefix} session {key}: it had no row, so one was created (session id {sid}).")
    elif doc.get("previousSessionId"):
        out(
            f"{prefix} session {key}: new session id {sid} (previous {sanitize_text(doc['previousSessionId'])})."
        )
    else:
        out(
            f"{prefix} session {key}: session id {sid} kept; a reset entry marks the new start in its transcript."
        )
    for path in doc.get("archived") or []:
        out(f"Archived transcript: {sanitize_text(path)}")
    if doc.get("warning"):
        out(f"Warning: {sanitize_text(doc['warning'])}")
    for warning in doc.get("warnings") or []:
        from openclaw_cli.output import err

        err(f"Warning: {sanitize_text(warning)}")


def _render_fork(doc: dict[str, Any]) -> None:
    from openclaw_cli.output import err, out, sanitize_text

    prefix = "[dry-run] would fork" if doc.get("dryRun") else "Forked"
    entry = doc.get("entry") or {}
    parent = sanitize_text(entry.get("parentSessionKey"))
    if doc.get("isolated"):
        out(
            f"{prefix} {parent} into {sanitize_text(doc.get('key'))} with isolated context "
            f"(session {sanitize_text(doc.get('sessionId'))})."
        )
    else:
        figures = ""
        if "copiedEntries" in doc:
            figures = f", {doc['copiedEntries']} entries, about {doc.get('parentTokens', 0)} tokens"
        out(
            f"{prefix} {parent} into {sanitize_text(doc.get('key'))} (session {sanitize_text(doc.get('sessionId'))}"
            f"{figures})."
        )
    if doc.get("warning"):
        err(f"Warning: {sanitize_text(doc['warning'])}")


# ---- commands -----------------------------------------------------------------------------------------


def register(sessions_app: typer.Typer) -> None:
    def simple(name: str, operation: str, help_text: str, *, dry: bool = True) -> None:
        def command(
            ctx: typer.Context,
            keys: list[str] = KEYS,
            dry_run: bool = DRY_RUN,
            agent: str = AGENT,
            store: str = STORE,
            json_mode: bool = JSON,
            url: str = GATEWAY_URL,
            token: str = GATEWAY_TOKEN,
            password: str = GATEWAY_PASSWORD,
            timeout: str = GATEWAY_TIMEOUT,
            no_backup: bool = NO_BACKUP,
        ) -> None:
            parent = _parent(ctx)
            batch_command(
                operation,
                keys,
                agent=agent or parent.get("agent"),
                store=store or parent.get("store"),
                dry_run=dry_run,
                json_mode=json_mode or bool(parent.get("json")),
                gateway=(url, token, password, timeout),
                no_backup=no_backup,
            )

        command.__doc__ = help_text
        sessions_app.command(name, help=help_text)(command)

    simple(
        "archive", "archive", "Archive sessions (hidden from listings until unarchived; transcripts stay)."
    )
    simple("unarchive", "unarchive", "Restore archived sessions.")
    simple("pin", "pin", "Pin sessions (listed first by OpenClaw's UI).")
    simple("unpin", "unpin", "Unpin sessions.")
    simple("mark-read", "mark-read", "Mark sessions as read.")
    simple("mark-unread", "mark-unread", "Mark sessions as unread.")

    @sessions_app.command("label", help="Set (or --clear) a session's label; labels are unique per store.")
    def label_command(
        ctx: typer.Context,
        key: str = KEY,
        text: str = typer.Argument(
            None, help="The label (trimmed, at most 512 characters).", show_default=False
        ),
        clear: bool = typer.Option(False, "--clear", help="Remove the label."),
        dry_run: bool = DRY_RUN,
        agent: str = AGENT,
        store: str = STORE,
        json_mode: bool = JSON,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
    ) -> None:
        parent = _parent(ctx)
        json_mode = json_mode or bool(parent.get("json"))

        def check() -> str | None:
            from openclaw_cli.errors import UsageError
            from openclaw_cli.ops.lifecycle import parse_label

            if clear and text is not None:
                raise UsageError("Pass either a label TEXT or --clear, not both.")
            if not clear and text is None:
                raise UsageError("Missing label TEXT (or pass --clear to remove the label).")
            return None if clear else parse_label(text)

        label = run(check, json_mode=json_mode)
        batch_command(
            "label",
            [key],
            agent=agent or parent.get("agent"),
            store=store or parent.get("store"),
            dry_run=dry_run,
            json_mode=json_mode,
            gateway=(url, token, password, timeout),
            label=label,
            no_backup=no_backup,
        )

    @sessions_app.command(
        "delete", help="Delete sessions: each transcript is archived (verified zstd) first."
    )
    def delete_command(
        ctx: typer.Context,
        keys: list[str] = KEYS,
        dry_run: bool = DRY_RUN,
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
        archived_only: bool = typer.Option(
            False, "--archived-only", help="Refuse sessions that are not archived."
        ),
        agent: str = AGENT,
        store: str = STORE,
        json_mode: bool = JSON,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
    ) -> None:
        parent = _parent(ctx)
        batch_command(
            "delete",
            keys,
            agent=agent or parent.get("agent"),
            store=store or parent.get("store"),
            dry_run=dry_run,
            json_mode=json_mode or bool(parent.get("json")),
            gateway=(url, token, password, timeout),
            yes=yes,
            archived_only=archived_only,
            no_backup=no_backup,
        )

    @sessions_app.command(
        "reset", help="Start a new session for KEY; the old transcript is archived (verified)."
    )
    def reset_command(
        ctx: typer.Context,
        key: str = KEY,
        reason: str = typer.Option("reset", "--reason", metavar="<new|reset>", help="Recorded reset reason."),
        dry_run: bool = DRY_RUN,
        agent: str = AGENT,
        store: str = STORE,
        json_mode: bool = JSON,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
    ) -> None:
        parent = _parent(ctx)
        json_mode = json_mode or bool(parent.get("json"))
        owner = agent or parent.get("agent")
        params: dict[str, Any] = {"key": key, "reason": reason}
        if owner:
            params["agentId"] = owner

        def precheck() -> None:
            if reason not in ("new", "reset"):
                from openclaw_cli.errors import UsageError

                raise UsageError(f"--reason must be new or reset (got {reason!r}).")

        _single(
            "sessions.reset",
            params,
            store=store or parent.get("store"),
            dry_run=dry_run,
            gateway=(url, token, password, timeout),
            expect_row=True,
            render=_render_reset,
            json_mode=json_mode,
            precheck=precheck,
            no_backup=no_backup,
        )

    @sessions_app.command("fork", help="Fork KEY: a new session starting from its active branch.")
    def fork_command(
        ctx: typer.Context,
        key: str = KEY,
        label: str = typer.Option(
            None, "--label", metavar="<text>", help="A label for the new session (unique)."
        ),
        to: str = typer.Option(
            None, "--to", metavar="<key>", help="The new session's key (default: a dashboard key)."
        ),
        dry_run: bool = DRY_RUN,
        agent: str = AGENT,
        store: str = STORE,
        json_mode: bool = JSON,
        url: str = GATEWAY_URL,
        token: str = GATEWAY_TOKEN,
        password: str = GATEWAY_PASSWORD,
        timeout: str = GATEWAY_TIMEOUT,
        no_backup: bool = NO_BACKUP,
    ) -> None:
        parent = _parent(ctx)
        json_mode = json_mode or bool(parent.get("json"))
        owner = agent or parent.get("agent")
        params: dict[str, Any] = {"parentSessionKey": key, "fork": True}
        if owner:
            params["agentId"] = owner
        if label is not None:
            params["label"] = label
        if to is not None:
            params["key"] = to

        def precheck() -> None:
            from openclaw_cli.lifecycle import check_session_key
            from openclaw_cli.ops.lifecycle import parse_label

            if label is not None:
                parse_label(label)
            if to is not None:
                check_session_key(to, what="--to key", new=True)

        _single(
            "sessions.create",
            params,
            store=store or parent.get("store"),
            dry_run=dry_run,
            gateway=(url, token, password, timeout),
            expect_row=False,
            render=_render_fork,
            json_mode=json_mode,
            precheck=precheck,
            no_backup=no_backup,
        )

    @sessions_app.command(
        "export", help="Export a transcript as JSONL, Markdown or one self-contained HTML page."
    )
    def export_command(
        ctx: typer.Context,
        key: str = KEY,
        fmt: str = typer.Option(
            None,
            "--format",
            metavar="<jsonl|md|html>",
            help="Output format (default: from --output's extension, else jsonl).",
        ),
        output: str = typer.Option(
            None, "--output", "-o", metavar="<path>", help="Write here (default: stdout)."
        ),
        branch: str = typer.Option(
            "active",
            "--branch",
            metavar="<active|all>",
            help="The active branch, or every entry of the tree (all).",
        ),
        agent: str = AGENT,
        store: str = STORE,
        json_mode: bool = JSON,
        redact: bool = typer.Option(
            False,
            "--redact",
            help="Mask what looks like a secret (API keys, tokens, bearer headers, "
            "private keys), as `sessions search --redact` does.",
        ),
    ) -> None:
        parent = _parent(ctx)
        json_mode = json_mode or bool(parent.get("json"))

        def body() -> None:
            from openclaw_cli.cli.export import export_session

            doc = export_session(
                _context(),
                key,
                fmt=fmt,
                output=output,
                branch=branch,
                agent=agent or parent.get("agent"),
                store=store or parent.get("store"),
                json_mode=json_mode,
                redact=redact,
            )
            if json_mode:
                echo_json(doc)

        run(body, json_mode=json_mode)
