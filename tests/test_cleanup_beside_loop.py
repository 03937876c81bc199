"""Issue 30 (stop 43): the work beside cleanup's archive loop — the after-apply measure lists the
sessions dir once for the sweep's count and the budget's bytes, with the same figures as the two
listings it replaces."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cleanup_support import (
    DAY,
    entry,
    maintenance_config,
    make_sqlite,
    service,
    sessions_dir,
    sessions_dir_of_every_kind,
)
from conftest import NOW_MS


@pytest.mark.parametrize("cold", ["none", "dir", "link-to-self", "link-to-blobs"])
@pytest.mark.parametrize("with_database", [False, True])
def test_one_listing_gives_the_sweeps_count_and_the_budgets_bytes(
    cold: str, with_database: bool, tmp_path: Path
) -> None:
    from openclaw_cli.maintenance.budget import count_swept_files, measure_physical, sweep_and_measure

    root = tmp_path / "agent" / "sessions"
    sessions_dir_of_every_kind(root, cold)
    database = None
    if with_database:
        database = tmp_path / "agent" / "db.sqlite"
        database.write_bytes(b"d" * 4096)
        Path(f"{database}-wal").write_bytes(b"l" * 8192)
        Path(f"{database}-shm").write_bytes(b"s" * 32768)  # never measured
    count, measure = sweep_and_measure(root, database)
    assert (count, measure) == (count_swept_files(root), measure_physical(root, database))
    assert count == 3  # a, b and the blob (`cold/` is not swept)
    # and a directory that cannot be listed: nothing, as either alone
    assert sweep_and_measure(tmp_path / "missing", None) == (
        count_swept_files(tmp_path / "missing"),
        measure_physical(tmp_path / "missing", None),
    )


def test_the_after_apply_measure_lists_the_sessions_dir_once(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2026.9.6+ (a sweep and a budget): the count and the budget's first measure come from one
    listing of the sessions dir after the apply (two before), with the same figures."""
    from openclaw_cli.maintenance import service as svc

    monkeypatch.setenv("OPENCLAW_CLI_BEHAVIOR", "2026.9.6")
    maintenance_config(state_dir, mode="enforce", pruneAfter="1d", maxEntries=2, maxDiskBytes="1gb")
    entries = {f"agent:main:s{i}": entry(f"s{i}", NOW_MS - (5 - i) * DAY) for i in range(5)}
    make_sqlite(state_dir, entries)
    root = os.path.realpath(sessions_dir(state_dir))
    os.makedirs(root, exist_ok=True)
    for i in range(7):  # files the sweep counts and the budget measures
        Path(root, f"old{i}.jsonl.deleted.2026-01-0{i + 1}T00-00-00.000Z").write_bytes(b"a" * (100 + i))
    Path(root, "x.jsonl.migrated").write_bytes(b"m" * 50)  # neither
    listed: list[str] = []
    measuring = [False]
    real_scandir, real_after = os.scandir, svc._measure_after_apply

    def scandir(path: Any = ".") -> Any:
        if measuring[0] and os.path.realpath(path) == root:
            listed.append(str(path))
        return real_scandir(path)

    def after(*args: Any, **kwargs: Any) -> None:
        measuring[0] = True
        try:
            real_after(*args, **kwargs)
        finally:
            measuring[0] = False

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(svc, "_measure_after_apply", after)
    doc = service(enforce=True, now_ms=NOW_MS)
    assert len(listed) == 1, listed
    files = [n for n in os.listdir(root) if os.path.isfile(os.path.join(root, n))]
    assert doc["archived"] >= 1
    assert doc["unreferencedArtifacts"]["scannedFiles"] == len(files) - 1 == 7
    budget = doc["diskBudget"]
    assert budget is not None and budget["totalBytesBefore"] >= sum(
        os.lstat(os.path.join(root, n)).st_size for n in files
    )


def test_the_ledgers_usage_of_an_export_equals_each_usage_line_parsed_whole() -> None:
    """`content_usage` (the ledger worker's parse of each leaving export) against an independent
    reading: every usage line parsed whole by the stdlib, its `message.usage` added under its
    `message.model` / `message.provider` — over real-shaped lines and their odd neighbours (a
    `usage` object nested in a tool call, the model after the usage, no model, a model that is not
    a string, a message that is not an object, a torn line, costs as int, float, object or
    absent)."""
    import json
    import random

    from openclaw_cli.store.usage_ledger import _STAMP, Usage, _iso_ms, content_usage

    rng = random.Random(4303)

    def usage_doc() -> dict[str, Any]:
        doc: dict[str, Any] = {
            "input": rng.randint(0, 20000),
            "output": rng.randint(0, 3000),
            "cacheRead": rng.choice([0, rng.randint(0, 9000)]),
            "cacheWrite": rng.choice([0, rng.randint(0, 900)]),
            "totalTokens": rng.choice([0, rng.randint(0, 30000)]),
        }
        cost = rng.choice(["int", "float", "dict", "none"])
        if cost == "int":
            doc["cost"] = rng.randint(0, 3)
        elif cost == "float":
            doc["cost"] = round(rng.random(), 6)
        elif cost == "dict":
            doc["cost"] = {"input": 0, "output": 0, "total": rng.choice([0, round(rng.random(), 9)])}
        return doc

    def line() -> str:
        stamp = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
        shape = rng.random()
        message: Any = {
            "role": "assistant",
            "content": [{"type": "text", "text": 'alpha {beta} "gamma" usage'}],
            "api": "openai-responses",
            "provider": rng.choice(["openai", "anthropic"]),
            "model": rng.choice(["gpt-5.4", "claude"]),
            "usage": usage_doc(),
            "stopReason": "stop",
            "timestamp": 1795849160831,
        }
        if shape < 0.1:  # a usage object inside a tool call's arguments, after the message's own
            message["content"].append({"type": "toolCall", "arguments": {"usage": usage_doc()}})
            message["tail"] = {"usage": usage_doc()}
        elif shape < 0.2:  # the model after the usage
            model = message.pop("model")
            message["model"] = model
        elif shape < 0.3:
            del message["model"]
        elif shape < 0.35:
            message["provider"] = 7
        elif shape < 0.4:
            message = [message]
        elif shape < 0.5:
            message = {"role": "user", "content": "hi"}
        doc = {"type": "message", "id": "ce55b6b2", "timestamp": stamp, "message": message}
        text = json.dumps(doc, separators=(",", ":"))
        if rng.random() < 0.03:
            text = text[: rng.randint(1, len(text) - 1)]  # torn
        return text

    def whole(content: bytes) -> Usage:
        usage = Usage()
        for raw in content.split(b"\n"):
            if not raw.strip():
                continue
            usage.events += 1
            stamp = _STAMP.search(raw, 0, 400)
            day = None
            if stamp is not None:
                day = stamp.group(1).decode()
                usage.see_time(_iso_ms(stamp.group(1), stamp.group(2)))
            if b'"usage":{"' not in raw:
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            message = obj.get("message") if isinstance(obj, dict) else None
            if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
                continue
            model, provider = message.get("model"), message.get("provider")
            usage.add_message(
                message["usage"],
                model if isinstance(model, str) else None,
                provider if isinstance(provider, str) else None,
                day,
            )
        return usage

    for _ in range(400):
        lines = [line() if rng.random() < 0.97 else "" for _ in range(rng.randint(0, 14))]
        content = ("\n".join(lines) + rng.choice(["\n", ""])).encode()
        assert content_usage(content) == whole(content), content
