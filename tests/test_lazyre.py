"""Module-level patterns compiled on first use (`openclaw_cli.lazyre`): the same matches as the
compiled pattern, the module's global replaced by it on first use, and `sessions search` compiling
none of the patterns it never uses (issue 26, stop 37: ~4 ms of a ~110 ms command)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_cli.lazyre import _LazyPattern, lazy_pattern
from tests.conftest import generate_legacy_state

MODULES = [
    "openclaw_cli.jsonutil",
    "openclaw_cli.keys",
    "openclaw_cli.ids",
    "openclaw_cli.store.legacy.store",
    "openclaw_cli.store.archives",
    "openclaw_cli.store.files",
    "openclaw_cli.store.names",
]


def test_first_use_compiles_and_replaces_the_global() -> None:
    namespace: dict[str, object] = {}
    namespace["P"] = lazy_pattern(namespace, "P", r"(\d+)-(\w+)", re.ASCII)
    stand_in = namespace["P"]
    assert isinstance(stand_in, _LazyPattern)
    assert stand_in.match("12-ab").groups() == ("12", "ab")  # type: ignore[attr-defined]
    assert namespace["P"] == re.compile(r"(\d+)-(\w+)", re.ASCII)
    assert stand_in.pattern == r"(\d+)-(\w+)"  # type: ignore[attr-defined]  # a kept reference still works
    raw: dict[str, object] = {}
    raw["B"] = lazy_pattern(raw, "B", rb"[a-z]+")
    assert raw["B"].findall(b"ab 12 cd") == [b"ab", b"cd"]  # type: ignore[attr-defined]


_STAND_INS = """
import importlib, re, sys
from openclaw_cli.lazyre import _LazyPattern
found = 0
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for attr, value in list(vars(module).items()):
        if isinstance(value, _LazyPattern):
            assert value._name == attr and value._namespace is vars(module), (name, attr)
            compiled = re.compile(*value._args)
            assert value._real() == compiled and getattr(module, attr) == compiled
            found += 1
print(found)
"""


def test_every_stand_in_is_the_pattern_it_names() -> None:
    # in a fresh interpreter: in this one, other tests may already have used (so replaced) them
    done = subprocess.run(
        [sys.executable, "-c", _STAND_INS, *MODULES], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 20


def test_a_search_compiles_none_of_the_patterns_it_does_not_use(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    generate_legacy_state(state_dir, 6, 0.05, 11)
    script = (
        "import json, sys\n"
        "from openclaw_cli.cli.entry import main\n"
        "sys.argv = ['openclaw', 'sessions', 'search', 'session', '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from openclaw_cli.lazyre import _LazyPattern\n"
        f"mods = {MODULES!r}\n"
        "out = {m: sorted(k for k, v in vars(sys.modules[m]).items() if isinstance(v, _LazyPattern))"
        " for m in mods if m in sys.modules}\n"
        "sys.stderr.write('LAZY' + json.dumps(out))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    left = json.loads(proc.stderr.rsplit("LAZY", 1)[1])
    assert json.loads(proc.stdout)["results"]
    assert left["openclaw_cli.jsonutil"] == ["_SURROGATE", "_TOKEN"]
    assert "openclaw_cli.keys" not in left  # (nor its 7 patterns: a search no longer imports it)
    assert sum(len(v) for v in left.values()) >= 16


def test_a_lazy_module_is_imported_on_first_use_and_put_in_place() -> None:
    script = (
        "import sys\n"
        "from openclaw_cli.lazyre import lazy_module\n"
        "ns = {}\n"
        "ns['colorsys'] = lazy_module(ns, 'colorsys')\n"
        "assert 'colorsys' not in sys.modules\n"
        "print(ns['colorsys'].rgb_to_hsv(1.0, 0.0, 0.0))\n"
        "print(ns['colorsys'] is sys.modules['colorsys'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["(0.0, 1.0, 1.0)", "True"]
