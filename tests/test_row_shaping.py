"""The listing row (`ops.rows.row_shaper` / `session_row`) and the two key rules it uses
(`keys.session_kind`, `keys.derive_row_flags`) were rewritten for speed (issue 16: 100,000 rows
per `--limit all`). The reference implementations below are the straightforward versions they
replaced; on arbitrary entries (every field the row reads, with values of every JSON type and
the awkward ones: bools for numbers, NaN, ±inf, numbers beyond the double range, empty strings,
cron keys in any case, non-ASCII keys) the rewritten code returns the same row, key order included."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_cli import keys
from openclaw_cli.jsonutil import RawNumber
from openclaw_cli.ops.rows import row_shaper, session_row

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- the reference versions (as they were before the rewrite) --------------------------------------

_REF_BEFORE_TOKENS = (
    "spawnedBy",
    "spawnedWorkspaceDir",
    "spawnedCwd",
    "parentSessionKey",
    "forkedFromParent",
    "spawnDepth",
    "subagentRole",
    "subagentControlScope",
    "sessionStartedAt",
    "lastInteractionAt",
    "label",
    "color",
    "status",
)
_REF_AFTER_VISIBILITY = (
    "createdActor",
    "owner",
    "participants",
    "participantCount",
    "systemSent",
    "abortedLastRun",
    "thinkingLevel",
    "verboseLevel",
    "traceLevel",
    "reasoningLevel",
    "elevatedLevel",
    "responseUsage",
    "groupActivation",
    "inputTokens",
    "outputTokens",
)


def _ref_number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _ref_flag_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and value not in (float("inf"), float("-inf")) else None


def ref_session_kind(key: Any, entry: Any = None) -> str:
    value = key.strip() if isinstance(key, str) else ""
    if value == "global":
        return "global"
    if value == "unknown":
        return "unknown"
    if keys.is_cron_key(value):
        return "cron"
    entry = entry if isinstance(entry, Mapping) else {}
    if entry.get("spawnedBy"):
        return "spawn-child"
    lowered = value.lower()
    if entry.get("chatType") in ("group", "channel") or ":group:" in lowered or ":channel:" in lowered:
        return "group"
    return "direct"


def ref_row_flags(entry: Any, key: Any = None) -> dict[str, bool]:
    entry = entry if isinstance(entry, Mapping) else {}
    archived = entry.get("archivedAt") is not None
    pinned = entry.get("pinnedAt") is not None and keys.is_pinnable(key, entry)
    unread = entry.get("markedUnreadAt") is not None
    if not unread:
        baseline = _ref_flag_number(entry.get("lastReadAt"))
        if baseline is None and entry.get("lastReadAt") is None:
            baseline = _ref_flag_number(entry.get("createdAt"))
        if baseline is not None:
            latest = max(
                _ref_flag_number(entry.get("lastInteractionAt")) or 0.0,
                _ref_flag_number(entry.get("lastActivityAt")) or 0.0,
            )
            unread = latest > baseline
    return {"archived": archived, "pinned": pinned, "unread": unread}


def ref_session_row(
    key: str,
    entry: dict[str, Any],
    *,
    agent_id: str,
    now_ms: int,
    default_model: str | None,
    default_context_tokens: int | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {"key": key}
    updated = _ref_number(entry.get("updatedAt"))
    row["updatedAt"] = updated
    row["ageMs"] = max(0, int(now_ms - updated)) if updated is not None and abs(updated) < 1e300 else None
    row["sessionId"] = entry.get("sessionId")
    for name in _REF_BEFORE_TOKENS:
        if name == "forkedFromParent":
            if entry.get(name) is True:
                row[name] = True
            continue
        if name in entry and entry[name] is not None:
            row[name] = entry[name]
    row["visibility"] = entry.get("visibility") if isinstance(entry.get("visibility"), str) else "shared"
    for name in _REF_AFTER_VISIBILITY:
        if name in entry and entry[name] is not None:
            row[name] = entry[name]
    total = _ref_number(entry.get("totalTokens"))
    row["totalTokens"] = total if total is not None and total >= 0 else None
    row["totalTokensFresh"] = entry.get("totalTokensFresh") is True
    for name in ("totalTokensVersion", "providerOverride", "modelOverride"):
        if name in entry and entry[name] is not None:
            row[name] = entry[name]
    model = entry.get("modelOverride") or entry.get("model")
    provider = entry.get("providerOverride") or entry.get("modelProvider")
    if not model and default_model:
        provider_default, _, model_default = default_model.rpartition("/")
        model = model_default
        provider = provider or (provider_default or None)
    row["model"] = model if isinstance(model, str) and model else None
    row["modelProvider"] = provider if isinstance(provider, str) and provider else None
    ctx = _ref_number(entry.get("contextTokens"))
    row["contextTokens"] = ctx if ctx is not None else default_context_tokens
    row["agentId"] = agent_id
    row["acpRuntime"] = isinstance(entry.get("acp"), dict)
    harness = entry.get("agentRuntimeOverride") or entry.get("agentHarnessId")
    if isinstance(harness, str) and harness:
        row["agentRuntime"] = {"id": harness, "source": "session"}
    row["kind"] = ref_session_kind(key, entry)
    row.update(ref_row_flags(entry, key))
    return row


# ---- arbitrary entries ----------------------------------------------------------------------------

FIELDS = sorted(
    {
        *_REF_BEFORE_TOKENS,
        *_REF_AFTER_VISIBILITY,
        "updatedAt",
        "sessionId",
        "visibility",
        "totalTokens",
        "totalTokensFresh",
        "totalTokensVersion",
        "providerOverride",
        "modelOverride",
        "model",
        "modelProvider",
        "contextTokens",
        "acp",
        "agentRuntimeOverride",
        "agentHarnessId",
        "chatType",
        "archivedAt",
        "pinnedAt",
        "markedUnreadAt",
        "lastReadAt",
        "createdAt",
        "lastActivityAt",
    }
)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            0,
            -0.0,
            1e300,
            -1e308,
            1796000000000,
            1795999999999.5,
            RawNumber(float("inf"), "1e400"),
            RawNumber(-0.0, "-0"),
        ]
    ),
)
words = st.sampled_from(
    [
        "",
        "group",
        "channel",
        "direct",
        "true",
        "openai",
        "gpt-5.4",
        "openai/gpt-5.4",
        "agent:main:main",
        "agent:main:cron:x",
        " ",
        "İ",
    ]
)
values = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    words,
    st.text(max_size=8),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2),
    st.lists(st.integers(), max_size=2),
)
entries = st.dictionaries(st.sampled_from(FIELDS), values, max_size=len(FIELDS))
session_keys = st.one_of(
    st.sampled_from(
        [
            "global",
            " unknown ",
            "agent:main:main",
            "agent:main:cron:job",
            "AGENT:Main:CRON:job:run:1",
            "cron:job",
            " Cron:x ",
            "agent:main:xcron:y",
            "agent:main:telegram:group:-1",
            "agent:main:slack:channel:C1",
            "agent:main:subagent:a",
            "agent::cron:x",
            "agent:main:",
            "agent:main::cron:x",
            "agent:İ:cron:x",
            "İcron:x",
            "agent:main:discord:GROUP:1",
            "",
        ]
    ),
    st.text(max_size=24),
)
default_models = st.sampled_from([None, "", "gpt-x", "openai/gpt-x", "/gpt-x", "a/b/c"])


def _same(a: Any, b: Any) -> bool:
    """Equal, key order and NaN included."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@SETTINGS
@given(session_keys, entries, default_models, st.sampled_from([None, 0, 200000]))
def test_row_shaper_returns_the_reference_row(
    key: str, entry: dict, default_model: str | None, default_ctx: int | None
):
    expected = ref_session_row(
        key,
        entry,
        agent_id="main",
        now_ms=1796000000000,
        default_model=default_model,
        default_context_tokens=default_ctx,
    )
    shape = row_shaper(
        agent_id="main", now_ms=1796000000000, default_model=default_model, default_context_tokens=default_ctx
    )
    assert _same(shape(key, entry), expected)
    assert _same(
        session_row(
            key,
            entry,
            agent_id="main",
            now_ms=1796000000000,
            default_model=default_model,
            default_context_tokens=default_ctx,
        ),
        expected,
    )


@SETTINGS
@given(st.one_of(session_keys, st.none(), st.integers()), st.one_of(entries, st.none(), st.just([])))
def test_session_kind_and_row_flags_match_the_reference(key: Any, entry: Any):
    assert keys.session_kind(key, entry) == ref_session_kind(key, entry)
    assert keys.derive_row_flags(entry, key) == ref_row_flags(entry, key)


def test_the_cron_shortcut_holds_for_keys_whose_case_folding_changes_length():
    """session_kind looks for "cron:" in the lower-cased key before splitting it: a key whose
    lower-casing changes length (İ lower-cases to two characters) is still classified alike."""
    for key in ("agent:İ:cron:x", "agent:main:CRON:İ", "İ:cron:x", "cron:İ", "agent:ⅭRON:x"):
        assert keys.session_kind(key) == ref_session_kind(key)
