"""Behaviour releases (spec D23): which OpenClaw release's rules a store follows, and why.

How to use it:

* An operation asks the operations layer for a store's release — `ops.behavior.behavior_for(ctx,
  store)` returns a `ResolvedBehavior` (`.behavior`, `.source`, `.reason`; `.to_json()` for
  `status`) — and hands `resolved.behavior` (a `Behavior`) to the domain: planners and lifecycle
  code read its facts (`behavior.maintenance.archive_in_place`,
  `behavior.lifecycle.reset_keeps_session_id`, …) instead of testing a release name. A new
  difference between releases is a new field here, filled for every release; never an
  `if release == …` elsewhere.
* The pure resolution is `resolve_behavior(...)` (D23, first match wins): `--behavior RELEASE` /
  `OPENCLAW_CLI_BEHAVIOR` (`requested()`); the version a Gateway owning the state announces
  (`hello-ok` `server.version`); a schema-24 database -> 2026.9.9; a schema-23 database ->
  2026.9.6; the config's `meta.lastTouchedVersion` -> the newest release not after it; else
  2026.9.9. Bad input (an unknown `--behavior` value, a `lastTouchedVersion` that is not a
  version) is a typed error naming the accepted values, never a silent fallback.
* `BEHAVIOR_2026_7` is the July-2026 baseline (G1 + profile L, what the seeds describe): a pure
  planner called without a behaviour (library use, unit tests) follows it.

Sources: `maintenance.md` (G1; Appendix A for G2/G3), `observed-openclaw-2026.9.6.md` §7–§8,
`openclaw-after-2026.9.6.md` §3 (9.7–9.9 maintenance), `docs/decisions.md` (issue 22).
"""

from __future__ import annotations

import os

from openclaw_cli.errors import ConfigError, UsageError
from openclaw_cli.lazyre import lazy_pattern
from openclaw_cli.records import FrozenRecord

ENV_BEHAVIOR = "OPENCLAW_CLI_BEHAVIOR"
DAY_MS = 86_400_000
GIB = 1024**3


class MaintenanceRules(FrozenRecord):
    """What `sessions cleanup` (and the write-path maintenance) does differently per release."""

    __slots__ = _fields = (
        "default_max_entries",
        "default_max_disk_bytes",
        "archive_in_place",
        "archive_dashboard_after_ms",
        "honours_preserve_recent",
        "protects_delivery_routes",
        "warn_dry_run_shows_enforce",
        "cleanup_cron_retention",
        "cron_placeholder_sweep",
        "final_disk_tier",
        "budget_spares_live_rows",
    )

    default_max_entries: int  # session.maintenance.maxEntries when unset
    default_max_disk_bytes: int  # session.maintenance.maxDiskBytes when unset
    # Stale and capped *human* (non-synthetic) rows get `archivedAt` + `archiveReason` instead of
    # being deleted; the cap then counts only rows that are not archived (G3).
    archive_in_place: bool
    # Default of `archiveDashboardAfter` (inactive `dashboard:` rows archived, `stale-dashboard`);
    # None: the release has no such stage (the key is ignored).
    archive_dashboard_after_ms: int | None
    honours_preserve_recent: bool  # `preserveRecent` protects rows active within the window
    # The observed 9.6 protected set: every complete delivery route (DMs included, e.g.
    # `telegram:direct:<peer>`), `direct:<peer>`, `delivery.kind == "external"`, pinned rows,
    # `status == "running"`, archived rows. False: G1's durable external pointers only.
    protects_delivery_routes: bool
    # Warn mode: a dry run shows what `--enforce` would do (9.6); False: it shows what a warn-mode
    # apply does, i.e. nothing automatic (our G1 decision).
    warn_dry_run_shows_enforce: bool
    # `cron.sessionRetention` as a cleanup stage over live cron-run rows (our G1 pipeline).
    cleanup_cron_retention: bool
    # 2026.9.9: the cron-run placeholder sweep (`{}` / entry_valid -1 rows older than
    # `cron.sessionRetention`), before the disk budget.
    cron_placeholder_sweep: bool
    # 2026.9.9: with an explicitly set maxDiskBytes, a last budget tier archives and removes the
    # oldest idle thread/channel/group/topic conversations.
    final_disk_tier: bool
    # The G2+ budget removes `active-session-cap` archives and evicts historical sessions only;
    # live rows are never evicted. False: G1 evicts unprotected live rows oldest first.
    budget_spares_live_rows: bool

    def __init__(
        self,
        default_max_entries: int,
        default_max_disk_bytes: int,
        archive_in_place: bool,
        archive_dashboard_after_ms: int | None,
        honours_preserve_recent: bool,
        protects_delivery_routes: bool,
        warn_dry_run_shows_enforce: bool,
        cleanup_cron_retention: bool,
        cron_placeholder_sweep: bool,
        final_disk_tier: bool,
        budget_spares_live_rows: bool,
    ) -> None:
        self._assign(
            default_max_entries,
            default_max_disk_bytes,
            archive_in_place,
            archive_dashboard_after_ms,
            honours_preserve_recent,
            protects_delivery_routes,
            warn_dry_run_shows_enforce,
            cleanup_cron_retention,
            cron_placeholder_sweep,
            final_disk_tier,
            budget_spares_live_rows,
        )


class LifecycleRules(FrozenRecord):
    """What reset and compaction do to a session's identity per release (`rel-lifecycle`)."""

    __slots__ = _fields = (
        "reset_keeps_session_id",
        "reset_appends_marker",
        "reset_creates_unknown_key",
        "compact_max_lines_keeps_session_id",
    )
    reset_keeps_session_id: bool  # reset keeps the key's sessionId (9.6/9.9) or gives a new one (L)
    reset_appends_marker: bool  # a `reset` entry is appended to the transcript (its chat.history Reset row)
    reset_creates_unknown_key: bool  # reset of a key with no row creates it (9.6 Gateway) vs not_found
    compact_max_lines_keeps_session_id: bool  # `compact --max-lines` keeps the sessionId (9.6/9.9)

    def __init__(
        self,
        reset_keeps_session_id: bool,
        reset_appends_marker: bool,
        reset_creates_unknown_key: bool,
        compact_max_lines_keeps_session_id: bool,
    ) -> None:
        self._assign(
            reset_keeps_session_id,
            reset_appends_marker,
            reset_creates_unknown_key,
            compact_max_lines_keeps_session_id,
        )


class Behavior(FrozenRecord):
    __slots__ = _fields = ("release", "maintenance", "lifecycle")
    release: str
    maintenance: MaintenanceRules
    lifecycle: LifecycleRules

    def __init__(self, release: str, maintenance: MaintenanceRules, lifecycle: LifecycleRules) -> None:
        self._assign(release, maintenance, lifecycle)

    @property
    def version(self) -> tuple[int, int, int]:
        parsed = parse_version(self.release)
        assert parsed is not None
        return parsed

    def __str__(self) -> str:
        return self.release


_G1 = MaintenanceRules(
    default_max_entries=500,
    default_max_disk_bytes=2 * GIB,
    archive_in_place=False,
    archive_dashboard_after_ms=None,
    honours_preserve_recent=False,
    protects_delivery_routes=False,
    warn_dry_run_shows_enforce=False,
    cleanup_cron_retention=True,
    cron_placeholder_sweep=False,
    final_disk_tier=False,
    budget_spares_live_rows=False,
)
_G3 = MaintenanceRules(
    default_max_entries=5000,
    default_max_disk_bytes=10 * GIB,
    archive_in_place=True,
    archive_dashboard_after_ms=7 * DAY_MS,
    honours_preserve_recent=True,
    protects_delivery_routes=True,
    warn_dry_run_shows_enforce=True,
    cleanup_cron_retention=False,
    cron_placeholder_sweep=False,
    final_disk_tier=False,
    budget_spares_live_rows=True,
)
_AFTER_96 = MaintenanceRules(
    **{
        **{name: getattr(_G3, name) for name in MaintenanceRules._fields},
        "cron_placeholder_sweep": True,
        "final_disk_tier": True,
    }
)

BEHAVIOR_2026_7 = Behavior(
    "2026.7",
    _G1,
    LifecycleRules(
        reset_keeps_session_id=False,
        reset_appends_marker=False,
        reset_creates_unknown_key=False,
        compact_max_lines_keeps_session_id=False,
    ),
)
_LIFECYCLE_96 = LifecycleRules(
    reset_keeps_session_id=True,
    reset_appends_marker=True,
    reset_creates_unknown_key=True,
    compact_max_lines_keeps_session_id=True,
)
BEHAVIOR_2026_9_6 = Behavior("2026.9.6", _G3, _LIFECYCLE_96)
BEHAVIOR_2026_9_9 = Behavior("2026.9.9", _AFTER_96, _LIFECYCLE_96)

RELEASES: dict[str, Behavior] = {
    b.release: b for b in (BEHAVIOR_2026_7, BEHAVIOR_2026_9_6, BEHAVIOR_2026_9_9)
}
NEWEST = BEHAVIOR_2026_9_9
ACCEPTED = ", ".join(RELEASES)

# How a release was chosen (`ResolvedBehavior.source`), in D23's order.
SOURCE_FLAG = "flag"
SOURCE_ENV = "env"
SOURCE_GATEWAY = "gateway"
SOURCE_SCHEMA = "database"
SOURCE_CONFIG = "config"
SOURCE_DEFAULT = "default"


class ResolvedBehavior(FrozenRecord):
    __slots__ = _fields = ("behavior", "source", "reason")
    behavior: Behavior
    source: str  # one of the SOURCE_* names
    reason: str  # one sentence for `status`: why this release

    def __init__(self, behavior: Behavior, source: str, reason: str) -> None:
        self._assign(behavior, source, reason)

    @property
    def release(self) -> str:
        return self.behavior.release

    def to_json(self) -> dict[str, str]:
        return {"release": self.behavior.release, "source": self.source, "reason": self.reason}


# ---- versions -----------------------------------------------------------------------------------

_VERSION = lazy_pattern(
    globals(), "_VERSION", r"v?(\d{4})\.(\d{1,2})(?:\.(\d{1,3}))?(?:([-+])([0-9A-Za-z.-]+))?"
)


def parse_version(text: object) -> tuple[int, int, int] | None:
    """An OpenClaw calendar version (`2026.9.6`, `2026.10.1-beta.2`, `2026.7`) as (year, month,
    patch); None when `text` is not one. A pre-release (`-beta.2`) comes *before* its release, so
    it is placed one patch lower (`2026.9.9-beta.1` -> (2026, 9, 8)); build metadata (`+…`) is
    ignored."""
    if not isinstance(text, str):
        return None
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        return None
    year, month, patch = int(match[1]), int(match[2]), int(match[3] or 0)
    if not 1 <= month <= 12:
        return None
    if match[4] == "-":
        patch -= 1  # a pre-release is older than its release (and newer than the patch before)
    return (year, month, patch)


def release_for_version(text: str) -> Behavior | None:
    """The newest behaviour release not after OpenClaw version `text`; the oldest release for a
    version before all of them; None when `text` is not a version."""
    version = parse_version(text)
    if version is None:
        return None
    chosen = BEHAVIOR_2026_7
    for behavior in RELEASES.values():
        if behavior.version <= version:
            chosen = behavior
    return chosen


def behavior_named(name: str, *, where: str) -> Behavior:
    """The release named exactly (`2026.9.6`); a UsageError naming the accepted values."""
    behavior = RELEASES.get(name.strip()) if isinstance(name, str) else None
    if behavior is None:
        raise UsageError(f"Unknown behaviour release {name!r} in {where}; use one of: {ACCEPTED}.")
    return behavior


# ---- what the operator asked for --------------------------------------------------------------

_flag: str | None = None


def set_requested(value: str | None) -> None:
    """The root `--behavior` option's value for this process (validated here: an unknown value is
    a UsageError naming the accepted ones). None clears it (the root callback runs per command)."""
    global _flag
    if value is not None:
        behavior_named(value, where="--behavior")
        value = value.strip()
    _flag = value


def requested(env: dict[str, str] | None = None) -> ResolvedBehavior | None:
    """`--behavior` (this process), else `OPENCLAW_CLI_BEHAVIOR`; None when neither is set."""
    if _flag is not None:
        return ResolvedBehavior(behavior_named(_flag, where="--behavior"), SOURCE_FLAG, f"--behavior {_flag}")
    raw = (os.environ if env is None else env).get(ENV_BEHAVIOR)
    if raw is None or not raw.strip():
        return None
    return ResolvedBehavior(
        behavior_named(raw, where=ENV_BEHAVIOR), SOURCE_ENV, f"{ENV_BEHAVIOR}={raw.strip()}"
    )


# ---- D23 ----------------------------------------------------------------------------------------


def resolve_behavior(
    *,
    explicit: ResolvedBehavior | None = None,
    gateway_version: str | None = None,
    gateway_url: str | None = None,
    openclaw_schema: int | None = None,
    last_touched_version: object = None,
    config_path: str | None = None,
) -> ResolvedBehavior:
    """D23, first match wins (see the module docstring). `explicit` is `requested()`;
    `gateway_version` the owning Gateway's `server.version` (ignored when it is not an OpenClaw
    version: our own Gateway announces openclaw-cli's version and applies these same rules);
    `openclaw_schema` the store's OpenClaw schema version (None for legacy stores and ours);
    `last_touched_version` the raw `meta.lastTouchedVersion` (absent: None)."""
    if explicit is not None:
        return explicit
    if gateway_version is not None:
        behavior = release_for_version(gateway_version)
        if behavior is not None:
            where = f" at {gateway_url}" if gateway_url else ""
            return ResolvedBehavior(
                behavior,
                SOURCE_GATEWAY,
                f"the Gateway owning the state{where} announces OpenClaw {gateway_version.strip()}",
            )
    if openclaw_schema is not None and openclaw_schema >= 24:
        return ResolvedBehavior(
            BEHAVIOR_2026_9_9,
            SOURCE_SCHEMA,
            f"an OpenClaw schema-{openclaw_schema} database (written by 2026.9.7 or later)",
        )
    if openclaw_schema == 23:
        return ResolvedBehavior(BEHAVIOR_2026_9_6, SOURCE_SCHEMA, "an OpenClaw schema-23 database (2026.9.6)")
    if last_touched_version is not None:
        behavior = (
            release_for_version(last_touched_version) if isinstance(last_touched_version, str) else None
        )
        where = config_path or "openclaw.json"
        if behavior is None:
            raise ConfigError(
                f"Invalid meta.lastTouchedVersion in {where}: {last_touched_version!r} is not an OpenClaw version "
                f"(expected YYYY.M.D, e.g. 2026.9.6). It decides which release's rules apply; pass --behavior "
                f"RELEASE (one of: {ACCEPTED}) or set {ENV_BEHAVIOR}, or fix the value.",
                path=where,
            )
        return ResolvedBehavior(
            behavior, SOURCE_CONFIG, f"config meta.lastTouchedVersion {str(last_touched_version).strip()}"
        )
    return ResolvedBehavior(
        NEWEST,
        SOURCE_DEFAULT,
        f"no Gateway, database or config names a release: the newest ({NEWEST.release})",
    )
