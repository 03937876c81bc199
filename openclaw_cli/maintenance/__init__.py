"""Session-store maintenance: pure planning (`plan`), disk-budget math (`budget`) and rendering
(`report`). Applying a plan (archives, store writes) lives with the stores and the operations
layer; nothing in this package performs I/O.
"""

from openclaw_cli.maintenance.budget import (
    DirFile,
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
