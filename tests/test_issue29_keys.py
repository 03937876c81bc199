"""Issue 29 finding 8 (keys): one rule for the keys `sessions.create` and `sessions.patch` create —
`sessions.patch` made `agent:main:` from `"agent:main:\\n\\r\\t"`, and rows `agent:main:../../x` and
`agent:main:a/b/c`, which `sessions.create` refuses. Patching an existing row is unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_cli.errors import UsageError
from tests.lifecycle_support import KEYS, make_templates, rows, use_template

BAD = [
    "agent:main:\n\r\t",
    "agent:main:../../x",
    "agent:main:a/b/c",
    "agent:main:x\nfoo",
    "agent:main:..",
    "../x",
    "a/b",
    "agent:main:a\\b",
    "agent:main::x",
    "   ",
]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_templates(tmp_path_factory, "keys29")


@pytest.fixture(params=["legacy", "sqlite"])
def state(request, templates, state_dir: Path) -> Path:
    use_template(templates[request.param], state_dir)
    return state_dir


def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.ops.methods import call as run
    from openclaw_cli.paths import resolve_paths

    return run(Context.load(resolve_paths()), method, params)


@pytest.mark.parametrize("key", BAD)
def test_patch_and_create_refuse_the_same_keys(state: Path, key: str) -> None:
    before = rows(state)
    with pytest.raises(UsageError) as created:
        call("sessions.create", {"key": key})
    with pytest.raises(UsageError) as patched:
        call("sessions.patch", {"key": key, "label": "x"})
    assert created.value.exit_code == patched.value.exit_code
    assert rows(state) == before  # no `agent:main:` row, nothing written


def test_patch_still_creates_a_well_formed_key_and_patches_existing_rows(state: Path) -> None:
    done = call("sessions.patch", {"key": "agent:main:dashboard:notes", "label": "notes"})
    assert done["ok"] and done["key"] == "agent:main:dashboard:notes"
    main = KEYS["main"]
    assert call("sessions.patch", {"key": main, "label": "main label"})["entry"]["label"] == "main label"
    assert rows(state)["agent:main:dashboard:notes"]["label"] == "notes"
