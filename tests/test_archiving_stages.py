"""`plan_archiving` (the releases that archive in place, `maintenance/archiving.py`) equals its four
stages written out literally over the whole store with the public predicates (issue 30: the
planner walks the key shapes once and the later stages only the rows they can take)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_cli.keys import is_model_run_probe_key, parse_agent_key
from openclaw_cli.maintenance.archiving import (
    REASON_AGE,
    REASON_CAP,
    REASON_DASHBOARD,
    Guard,
    activity_at,
    is_disposable,
    plan_archiving,
)

DAY = 86_400_000
NOW = 1_800_000_000_000


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def reference(
    store: Mapping[str, Any],
    guard: Guard,
    prune_after_ms: int | None,
    max_entries: Any,
    dashboard_after_ms: int | None,
    model_run_after_ms: int | None,
) -> dict[str, Any]:
    """The module docstring's stages, each over the whole store in store order."""
    now = guard.now_ms
    deleted: list[tuple[str, str]] = []
    archived: dict[str, str] = {}
    gone: set[str] = set()
    already = {k for k, e in store.items() if isinstance(e, Mapping) and "archivedAt" in e}
    counts = dict(model_run_pruned=0, archived_count=0, cap_archived=0, pruned=0, capped=0)

    def entry(key: str) -> Mapping[str, Any]:
        value = store[key]
        return value if isinstance(value, Mapping) else {}

    def free(key: str) -> bool:
        return key not in already and key not in archived and not guard.preserved(key, entry(key), False)

    def dashboard(key: str) -> bool:
        parsed = parse_agent_key(key)
        return bool(parsed) and parsed[1].lower().startswith("dashboard:")

    cap = (
        max_entries
        if isinstance(max_entries, int) and not isinstance(max_entries, bool) and max_entries > 0
        else None
    )
    if cap is not None and len(store) - len(already) > cap and model_run_after_ms and model_run_after_ms > 0:
        for key in [k for k in store if is_model_run_probe_key(k) and free(k)]:
            updated = entry(key).get("updatedAt")
            if _number(updated) and updated < now - model_run_after_ms:
                gone.add(key)
                deleted.append((key, "prune-model-run"))
                counts["model_run_pruned"] += 1
    if dashboard_after_ms and dashboard_after_ms > 0:
        for key in store:
            if (
                key not in gone
                and dashboard(key)
                and free(key)
                and 0 < activity_at(entry(key)) < now - dashboard_after_ms
            ):
                archived[key] = REASON_DASHBOARD
                counts["archived_count"] += 1
    if prune_after_ms and prune_after_ms > 0:
        for key in store:
            if key in gone or key in archived or key in already:
                continue
            updated = entry(key).get("updatedAt")
            if not (_number(updated) and updated < now - prune_after_ms) or not free(key):
                continue
            if is_disposable(key):
                gone.add(key)
                deleted.append((key, "prune-stale"))
                counts["pruned"] += 1
            else:
                archived[key] = REASON_AGE
                counts["archived_count"] += 1
    if cap is not None:
        overflow = len(store) - len(already) - len(archived) - len(gone) - cap
        if overflow > 0:
            eligible = [k for k in store if k not in gone and free(k)]
            eligible.reverse()
            eligible.sort(key=lambda k: activity_at(entry(k)))
            for key in eligible[:overflow]:
                if is_disposable(key):
                    gone.add(key)
                    deleted.append((key, "cap-overflow"))
                else:
                    archived[key] = REASON_CAP
                    counts["cap_archived"] += 1
                counts["capped"] += 1
    return dict(deleted=deleted, archived=list(archived.items()), **counts)


KEYS = st.one_of(
    st.sampled_from(
        [
            "agent:main:main",
            "global",
            "agent:main:telegram:direct:42",
            "agent:main:telegram:group:-100",
            "agent:main:discord:channel:7",
            "agent:main:slack:acct:dm:u1",
            "agent:main:direct:peer",
            "agent:main:telegram:direct:5:topic:9",
            "agent:main:chat:thread:abc",
            "agent:main:cron:job-1",
            "agent:main:cron:job-2:run:r1",
            "agent:main:subagent:x1",
            "agent:main:hook:h",
            "agent:main:heartbeat",
            "agent:main:dashboard:d1",
            "agent:main:dashboard:d2",
            "agent:ops:dashboard:d1",
            "agent:main:explicit:model-run-0b0e1c2a-3f4d-4e5f-8a9b-0c1d2e3f4a5b",
            "agent:MAIN:Explicit:Model-Run-0B0E1C2A-3F4D-4E5F-8A9B-0C1D2E3F4A5C",
            " agent:main:dashboard:d3 ",
            "Agent:Main:Dashboard:D4",
            "agent:main:plain",
            "agent:main:",
            "notakey",
            "dashboard:x",
        ]
    ),
    st.text(alphabet="agentmis:dhborcx-1 İK", min_size=0, max_size=24),
)
TIMES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([NOW - 400 * DAY, NOW - 40 * DAY, NOW - 10 * DAY, NOW - 2 * DAY, NOW - 1000, NOW]),
    st.integers(min_value=-5, max_value=NOW),
    st.floats(allow_nan=True, allow_infinity=False),
    st.just("2026-01-01"),
)
ENTRIES = st.one_of(
    st.fixed_dictionaries(
        {"updatedAt": TIMES},
        optional={
            "lastInteractionAt": TIMES,
            "sessionStartedAt": TIMES,
            "archivedAt": TIMES,
            "pinnedAt": st.just(1),
            "status": st.sampled_from(["running", "idle"]),
            "modelSelectionLocked": st.booleans(),
            "chatType": st.sampled_from(["group", "direct", " Channel ", "thread"]),
            "delivery": st.sampled_from([{"kind": "external"}, {"kind": "internal"}, "external"]),
            "origin": st.just({"chatType": "group"}),
            "sessionId": st.sampled_from(["s1", "s2", "s3"]),
            "spawnedBy": st.just("agent:main:main"),
        },
    ),
    st.sampled_from([None, "text", 3, []]),
)
LIMITS = st.one_of(st.none(), st.just(0), st.just(-DAY), st.sampled_from([DAY, 7 * DAY, 30 * DAY]))


@settings(max_examples=400, deadline=None)
@given(
    store=st.dictionaries(KEYS, ENTRIES, max_size=30),
    max_entries=st.one_of(st.none(), st.just(True), st.integers(min_value=-1, max_value=12)),
    prune=LIMITS,
    dashboard=LIMITS,
    model_run=LIMITS,
    preserve_keys=st.frozensets(st.sampled_from(["agent:main:plain", "agent:main:dashboard:d1", " global"])),
    preserve_sids=st.frozensets(st.sampled_from(["s1", "s2"])),
    recent=st.one_of(st.none(), st.just(3 * DAY)),
)
def test_the_stages_equal_their_literal_reference(
    store, max_entries, prune, dashboard, model_run, preserve_keys, preserve_sids, recent
):
    def guard() -> Guard:
        return Guard(preserve_keys, preserve_sids, recent, NOW)

    out = plan_archiving(
        store,
        guard=guard(),
        prune_after_ms=prune,
        max_entries=max_entries,
        dashboard_after_ms=dashboard,
        model_run_after_ms=model_run,
    )
    got = dict(
        deleted=out.deleted,
        archived=list(out.archived.items()),
        model_run_pruned=out.model_run_pruned,
        archived_count=out.archived_count,
        cap_archived=out.cap_archived,
        pruned=out.pruned,
        capped=out.capped,
    )
    assert got == reference(store, guard(), prune, max_entries, dashboard, model_run)
