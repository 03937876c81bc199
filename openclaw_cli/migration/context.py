"""What every migration mode shares: the resolved state dir and config, options, progress reporting
and the crash-test hook."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_cli.crashpoints import CrashPoints
from openclaw_cli.paths import StatePaths

CRASH_ENV = "OPENCLAW_MIGRATION_CRASH_AT"  # test hook: SIGKILL ourselves at the k-th crash point
CRASH_COUNT_ENV = "OPENCLAW_MIGRATION_CRASH_COUNT_FILE"  # test hook: write how many points were passed


class Progress:
    """No-op progress sink; the CLI passes a Rich-backed one (stderr, interactive, not --json)."""

    def start(self, description: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def stop(self) -> None:
        pass


class RichProgress(Progress):
    def __init__(self) -> None:
        from openclaw_cli.output import progress

        self._prog, _, _ = progress(None, "", json_mode=False)
        self._task: Any = None
        self._started = False

    def start(self, description: str, total: int) -> None:
        if not self._started:
            self._prog.start()
            self._started = True
        if self._task is not None:
            self._prog.remove_task(self._task)
        self._task = self._prog.add_task(description, total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._prog.advance(self._task, n)

    def stop(self) -> None:
        if self._started:
            self._prog.stop()
            self._started = False


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
class Context:
    paths: StatePaths  # state_dir is the realpath (symlinks above the state dir resolved once)
    config: Any
    options: Options
    progress: Progress = field(default_factory=Progress)
    busy_timeout_ms: int = 60000
    crash: CrashPoints = field(default_factory=lambda: CrashPoints("OPENCLAW_MIGRATION", count_env=CRASH_COUNT_ENV))

    @property
    def state_dir(self) -> Path:
        return self.paths.state_dir

    @property
    def mode(self) -> str:
        return self.options.mode

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def checkpoint(self, label: str) -> None:
        """Crash-test hook (D6.4 tests): with OPENCLAW_MIGRATION_CRASH_AT=k the process SIGKILLs
        itself at the k-th checkpoint, exactly as an operator's kill -9 would."""
        self.crash(label)

    def finish(self) -> None:
        self.crash.finish()
