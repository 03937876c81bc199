"""What one operation run carries: resolved paths, the loaded config, the clock, a progress sink
and the hints it collects (spec D2: "said once")."""

from __future__ import annotations

from collections.abc import Callable

from openclaw_cli.clock import now_ms
from openclaw_cli.paths import StatePaths
from openclaw_cli.records import FrozenRecord, Record

TYPE_CHECKING = False  # no `typing` at run time: a search imports this module
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.progress import ProgressFactory
    from openclaw_cli.store.base import SessionStore


class Reuse(FrozenRecord):
    """What a read handler may say of its answer (`Context.reuse`): a live server may send it again,
    the same but for the fields at `now_fields` (paths of keys: the clock's value then), for as long
    as `probe` (`store.base.ChangeProbe`) reads what it read around this read."""

    __slots__ = _fields = ("probe", "now_fields")
    probe: Any
    now_fields: tuple[tuple[str, ...], ...]

    def __init__(self, probe: Any, now_fields: tuple[tuple[str, ...], ...] = ()) -> None:
        self._assign(probe, now_fields)


class Context(Record):
    _fields = (
        "paths",
        "config",
        "clock",
        "progress",
        "hints",
        "failures",
        "backup",
        "owning_gateway",
        "gateway_presence",
        "reuse",
        "caller_scopes",
    )
    paths: StatePaths
    config: Any  # openclaw_cli.config.LoadedConfig
    clock: Callable[[], int]
    progress: ProgressFactory | None
    hints: list[str]
    # typed errors an aggregate read reported per store and went on past (`--all-agents`, `status`)
    failures: list[Any]
    backup: bool  # back a real OpenClaw database up before its first write (`--no-backup`, D21)
    # (server.version, url) of the Gateway that owns this state, from its hello-ok (D23): set by a
    # front end that asked it; its release's rules then apply to previews (`ops.behavior`)
    owning_gateway: tuple[str, str] | None
    # the clients connected to the Gateway serving this call (`system-presence`); None off the Gateway
    gateway_presence: Callable[[], list[dict[str, Any]]] | None
    # set by a read whose answer may be reused while its sources are unchanged (`Reuse`): the
    # Gateway's answer cache for the methods marked `reusable`
    reuse: Reuse | None
    # the operator scopes of the Gateway connection making this call (a rule that depends on more than
    # the params reads them: `sessions.groups.update`'s cwd); None for a local call, whose operator
    # holds the state itself
    caller_scopes: frozenset[str] | None

    def __init__(
        self,
        paths: StatePaths,
        config: Any,
        clock: Callable[[], int] = now_ms,
        progress: ProgressFactory | None = None,
        hints: list[str] | None = None,
        failures: list[Any] | None = None,
        backup: bool = True,
        owning_gateway: tuple[str, str] | None = None,
        gateway_presence: Callable[[], list[dict[str, Any]]] | None = None,
        reuse: Reuse | None = None,
        caller_scopes: frozenset[str] | None = None,
    ) -> None:
        self.paths = paths
        self.config = config
        self.clock = clock
        self.progress = progress
        self.hints = [] if hints is None else hints
        self.failures = [] if failures is None else failures
        self.backup = backup
        self.owning_gateway = owning_gateway
        self.gateway_presence = gateway_presence
        self.reuse = reuse
        self.caller_scopes = caller_scopes

    @classmethod
    def load(cls, paths: StatePaths, *, strict: bool = True, **kwargs: Any) -> Context:
        """Load the config and make `session.store` (a custom store path) part of the paths, so
        every command looks at the same store (the one the migration imported into)."""
        from openclaw_cli.config import load_config, session_store_template

        config = load_config(paths) if strict else load_config(paths, strict=False)
        return cls(paths=paths.with_session_store(session_store_template(config)), config=config, **kwargs)

    def now_ms(self) -> int:
        return self.clock()

    def hint(self, text: str) -> None:
        if text not in self.hints:
            self.hints.append(text)

    def write_options(self) -> Any:
        """How this run writes stores (`store.base.WriteOptions`)."""
        from openclaw_cli.store.base import WriteOptions

        return WriteOptions(backup=self.backup, state_dir=self.paths.state_dir)

    def note_writes(self, store: SessionStore) -> None:
        """What a written store wants the operator told (its backup), as hints (said once)."""
        for notice in store.write_notices():
            self.hint(notice)

    def lock_settings(self) -> Any:
        from openclaw_cli.config import write_lock_settings

        return write_lock_settings(self.config)

    def busy_timeout_ms(self) -> int:
        from openclaw_cli.config.resolve import sqlite_busy_timeout_ms

        return sqlite_busy_timeout_ms(self.lock_settings())  # capped to what SQLite accepts
