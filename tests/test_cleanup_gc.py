"""The cyclic collector is paused over a cleanup's plan and apply (issue 30: the apply's
allocations set off passes over the planned rows) and running again once the store is done, also
when the apply fails."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.ops import cleanup as ops_cleanup

NOW = 1796000000000


def _clean(state: Path) -> Any:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    (state / "openclaw.json").write_text(
        json.dumps({"session": {"maintenance": {"mode": "enforce", "pruneAfter": "30d", "maxEntries": 2}}})
    )
    return ops_cleanup.cleanup_stores(
        Context.load(resolve_paths()), ops_cleanup.CleanupOptions(enforce=True), now_ms=NOW
    )


def test_the_collector_is_paused_over_the_apply_and_back_after(
    legacy_fixture_state: Path, monkeypatch: pytest.MonkeyPatch
):
    seen: list[bool] = []
    apply = ops_cleanup.apply_store

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return apply(*args, **kwargs)

    monkeypatch.setattr(ops_cleanup, "apply_store", recording)
    assert gc.isenabled()
    (result,) = _clean(legacy_fixture_state)
    assert seen == [False]
    assert result.outcome is not None and result.plan.removed  # (rows left: the apply ran)
    assert gc.isenabled()


def test_a_failing_apply_leaves_the_collector_running(
    legacy_fixture_state: Path, monkeypatch: pytest.MonkeyPatch
):
    def failing(*args: Any, **kwargs: Any) -> Any:
        assert not gc.isenabled()
        raise OSError("disk gone")

    monkeypatch.setattr(ops_cleanup, "apply_store", failing)
    with pytest.raises(OSError):
        _clean(legacy_fixture_state)
    assert gc.isenabled()
