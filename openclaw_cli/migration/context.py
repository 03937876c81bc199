"""What every migration mode shares: the resolved state dir and config, options, progress reporting
(`progress.TaskProgress`) and the crash-test hook."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli import clock
from openclaw_cli.crashpoints import CrashPoints
from openclaw_cli.paths import StatePaths
from openclaw_cli.progress import TaskProgress

CRASH_ENV = "OPENCLAW_MIGRATION_CRASH_AT"  # test hook: SIGKILL ourselves at the k-th crash point
CRASH_COUNT_ENV = "OPENCLAW_MIGRATION_CRASH_COUNT_FILE"  # test hook: write how many points were passed


Progress = TaskProgress  # the migration drives sequential tasks (import, validate, archive)


@dataclass
class Options:
    mode: str
    agent: str | None = None
    all_agents: bool = False
    store: str | None = None
    json: bool = False
    yes: bool = False
    github_issue: bool = False


@dataclass
class MigrationContext:
    """One `doctor --session-sqlite` run: what the migration modules share (built by ops/doctor from
    the ops Context; a separate name so the two are never confused)."""

    paths: StatePaths  # state_dir is the realpath (symlinks above the state dir resolved once)
    config: Any
    options: Options
    progress: Progress = field(default_factory=Progress)
    busy_timeout_ms: int = 60000
    crash: CrashPoints = field(
        default_factory=lambda: CrashPoints("OPENCLAW_MIGRATION", count_env=CRASH_COUNT_ENV)
    )
    # a destructive mode's last ownership step (our 2026.9.8+ owner file, the leftover sweep),
    # called by the import after its read-only checks (with the sessions dirs' names its space
    # check listed: `engine._sweep_leftovers`); a no-op outside the ownership block
    claim_state: Callable[..., None] = lambda listed=None: None

    @property
    def state_dir(self) -> Path:
        return self.paths.state_dir

    @property
    def mode(self) -> str:
        return self.options.mode

    @staticmethod
    def now_ms() -> int:
        return clock.now_ms()

    def checkpoint(self, label: str) -> None:
        """Crash-test hook (D6.4 tests): with OPENCLAW_MIGRATION_CRASH_AT=k the process SIGKILLs
        itself at the k-th checkpoint, exactly as an operator's kill -9 would."""
        self.crash(label)

    def finish(self) -> None:
        self.crash.finish()
