"""Session-store maintenance.

Pure: planning (`plan`), disk-budget math (`budget`), rendering (`report`) — no I/O.
Effects: `artifacts` (the sessions-dir snapshot and the file sweeps), `apply` (archive-then-
remove on legacy and SQLite stores), `writer` (one mutation at a time per store), `service`
(the cleanup operation the CLI runs and a Gateway would serve). The effect modules are imported
lazily by their callers, so importing this package stays cheap.
"""

from openclaw_cli.maintenance.budget import (
    DiskBudgetResult,
    FileRemoval,
    LegacyDirMeasure,
    SqliteMeasure,
)
from openclaw_cli.maintenance.plan import (
    CleanupPlan,
    CronRetentionPlan,
    MaintenanceSettingsLike,
    entry_high_water,
    plan_cleanup,
    plan_cron_retention,
    plan_runtime_maintenance,
)
from openclaw_cli.store.files import DirFile

__all__ = [
    "CleanupPlan",
    "CronRetentionPlan",
    "DirFile",
    "DiskBudgetResult",
    "FileRemoval",
    "LegacyDirMeasure",
    "MaintenanceSettingsLike",
    "SqliteMeasure",
    "entry_high_water",
    "plan_cleanup",
    "plan_cron_retention",
    "plan_runtime_maintenance",
]
