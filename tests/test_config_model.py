"""The config model (our own field-table validator) and the start-up cost of loading a config."""

from __future__ import annotations

import copy
import json
import math
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_cli.config import load_config, maintenance_settings, validate_config, write_lock_settings
from openclaw_cli.config import model as m
from openclaw_cli.config.loader import parse_config_bytes
from openclaw_cli.errors import ConfigError

CONFIG = Path("/test/openclaw.json")


def issues_of(raw: dict) -> list[dict[str, str]]:
    with pytest.raises(ConfigError) as info:
        validate_config(raw, CONFIG)
    return info.value.issues


# ---------------------------------------------------------------------------------------------
# Field tables


def _camel(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(part.title() for part in rest)


SECTIONS = [
    cls
    for cls in vars(m).values()
    if isinstance(cls, type) and issubclass(cls, m._Section) and cls is not m._Section
]


@pytest.mark.parametrize("cls", SECTIONS, ids=lambda cls: cls.__name__)
def test_field_tables_map_camel_case_keys_to_snake_case_attributes(cls):
    assert cls.__slots__ == tuple(f.attr for f in cls._fields)
    for f in cls._fields:
        expected = "list" if f.attr == "agent_list" else _camel(f.attr)
        assert f.key == expected, (cls.__name__, f.attr)


def test_warned_key_sets_are_the_modelled_keys():
    expected = {
        "mode",
        "pruneAfter",
        "pruneDays",
        "maxEntries",
        "resetArchiveRetention",
        "maxDiskBytes",
        "highWaterBytes",
        "archiveDashboardAfter",
        "preserveRecent",
        "rotateBytes",
    }  # + the 2026.9.6 keys (D23)
    assert expected == m.MAINTENANCE_KEYS
    assert "memoryFlush" in m.COMPACTION_KEYS and "keepRecentTokens" in m.COMPACTION_KEYS
    assert len(m.COMPACTION_KEYS) == 20
    nested = {
        "qualityGuard": {"enabled", "maxRetries"},
        "midTurnPrecheck": {"enabled"},
        "memoryFlush": {
            "enabled",
            "model",
            "softThresholdTokens",
            "forceFlushTranscriptBytes",
            "prompt",
            "systemPrompt",
        },
    }
    assert nested == m.COMPACTION_NESTED_KEYS


# ---------------------------------------------------------------------------------------------
# Section objects


def test_defaults_are_all_unset_with_nested_sections_present():
    config = m.OpenClawConfig()
    assert config.session.maintenance.max_entries is None
    assert config.session.reset is None and config.session.reset_by_type is None
    assert config.agents.defaults.compaction.memory_flush.enabled is None
    assert config.agents.agent_list is None and config.agents.entries is None
    assert config.gateway.auth.token is None and config.cron.run_log.keep_lines is None
    assert config == m.OpenClawConfig() and hash(config) == hash(m.OpenClawConfig())


def test_sections_are_immutable():
    config = validate_config({"session": {"maintenance": {"maxEntries": 5}}}, CONFIG).model
    with pytest.raises(AttributeError):
        config.session.maintenance.max_entries = 1
    with pytest.raises(AttributeError):
        del config.session
    with pytest.raises(AttributeError):
        config.not_a_field = 1
    assert config.session.maintenance.max_entries == 5


def test_equality_repr_copy_and_pickle():
    raw = {
        "session": {"maintenance": {"pruneAfter": "2d"}, "resetByType": {"group": {"mode": "idle"}}},
        "agents": {"list": [{"id": "ops", "model": {"primary": "a/b"}}]},
    }
    one = validate_config(raw, CONFIG).model
    two = validate_config(copy.deepcopy(raw), CONFIG).model
    assert one == two and one != m.OpenClawConfig()
    assert one.session.maintenance != one.session.write_lock  # different sections never compare equal
    assert repr(one.session.maintenance).startswith("MaintenanceConfig(mode=None, prune_after=172800000, ")
    for clone in (copy.copy(one), copy.deepcopy(one), pickle.loads(pickle.dumps(one))):
        assert clone == one and type(clone) is m.OpenClawConfig
    assert one.agents.agent_list[0].model == {"primary": "a/b"}
    assert one.agents.agent_list[0].model is not raw["agents"]["list"][0]["model"]  # a copy, as before


def test_direct_construction_validates():
    assert m.MaintenanceConfig(maxEntries=5).max_entries == 5
    assert m.MaintenanceConfig(max_entries=5).max_entries == 5
    with pytest.raises(m.ConfigValidationError) as info:
        m.MaintenanceConfig(maxEntries=0, mode="x")
    assert [(loc, reason) for loc, reason, _ in info.value.issues] == [
        (("mode",), 'expected one of "enforce", "warn"'),
        (("maxEntries",), "must be positive"),
    ]


def test_camel_case_key_wins_over_attribute_name():
    # The former models accepted both spellings (populate_by_name); the file's own key wins.
    model = validate_config({"session": {"maintenance": {"maxEntries": 7, "max_entries": -1}}}, CONFIG).model
    assert model.session.maintenance.max_entries == 7
    model = validate_config({"session": {"maintenance": {"max_entries": 9}}}, CONFIG).model
    assert model.session.maintenance.max_entries == 9
    model = validate_config({"agents": {"agent_list": [{"id": "x"}]}}, CONFIG).model
    assert [a.id for a in model.agents.agent_list] == ["x"]
    assert (
        issues_of({"session": {"maintenance": {"max_entries": -1}}})[0]["path"]
        == "session.maintenance.max_entries"
    )


def test_nulls_inside_sections_mean_unset_but_null_entries_are_errors():
    model = validate_config({"session": {"maintenance": {"maxEntries": None}, "reset": None}}, CONFIG).model
    assert model.session.maintenance.max_entries is None and model.session.reset is None
    found = issues_of({"session": {"resetByType": {"group": None}}, "agents": {"list": [None]}})
    assert [(i["path"], i["message"].split(" (")[1].split(")")[0]) for i in found] == [
        ("session.resetByType.group", "expected an object"),
        ("agents.list[0]", "expected an object"),
    ]


def test_issues_come_in_field_order_with_paths():
    raw = {
        "gateway": {"port": 0},
        "agents": {
            "entries": {"ops": {"contextTokens": -1}, "bad": 3},
            "list": [{"id": "a", "default": "yes"}],
        },
        "session": {"writeLock": {"staleMs": "1"}, "maintenance": {"mode": 1}},
    }
    assert [i["path"] for i in issues_of(raw)] == [
        "session.maintenance.mode",
        "session.writeLock.staleMs",
        "agents.entries.ops.contextTokens",
        "agents.entries.bad",
        "agents.list[0].default",
        "gateway.port",
    ]


def test_lenient_load_drops_bad_entries_and_keeps_good_ones():
    raw = {
        "agents": {
            "entries": {"ops": {"default": True}, "bad": 3},
            "list": [7, {"id": "w", "contextTokens": 0}],
        },
        "session": {"resetByChannel": {"discord": "daily", "slack": {"mode": "idle"}}},
    }
    loaded = validate_config(raw, CONFIG, strict=False)
    assert [e["path"] for e in loaded.errors] == [
        "session.resetByChannel.discord",
        "agents.entries.bad",
        "agents.list[0]",
        "agents.list[1].contextTokens",
    ]
    model = loaded.model
    assert list(model.agents.entries) == ["ops"]
    assert [(a.id, a.context_tokens) for a in model.agents.agent_list] == [("w", None)]
    assert list(model.session.reset_by_channel) == ["slack"]


def test_non_string_keys_from_python_callers_are_issues():
    found = issues_of({"session": {"resetByType": {1: {"mode": "idle"}, "group": {"mode": "idle"}}}})
    assert found == [
        {"path": "session.resetByType[1].[key]", "message": "1 (Input should be a valid string)"}
    ]


def test_python_sequences_are_accepted_for_agent_lists():
    model = validate_config({"agents": {"list": ({"id": "a"}, {"id": "b"})}}, CONFIG).model
    assert [a.id for a in model.agents.agent_list] == ["a", "b"]


def test_root_that_is_not_an_object_is_one_issue():
    model, found = m.build_config([1])
    assert found == [((), "expected an object", [1])] and model == m.OpenClawConfig()


# ---------------------------------------------------------------------------------------------
# Hostile values never escape as tracebacks


def test_huge_integer_for_a_fraction_is_an_issue(isolated_env):
    # math.isfinite() overflows on a 400-digit integer (JSON5 parses it exactly); it used to crash.
    isolated_env["config"].write_text(
        "{agents: {defaults: {compaction: {maxHistoryShare: 1" + "0" * 400 + "}}}}"
    )
    with pytest.raises(ConfigError) as info:
        load_config(isolated_env["config"])
    assert info.value.issues[0]["path"] == "agents.defaults.compaction.maxHistoryShare"
    assert "must be between 0 and 1" in info.value.issues[0]["message"]


def test_deeply_nested_bad_value_is_reported_not_a_traceback():
    # orjson parses 1000 levels, more than json.dumps can print back: the value shown degrades.
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    found = issues_of({"session": {"maintenance": {"maxEntries": deep}}})
    assert found == [
        {
            "path": "session.maintenance.maxEntries",
            "message": "<list> (expected an integer, got an array). Example: 500",
        }
    ]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["30d", "2gb", "Infinity", "enforce", "daily", "", "1h30m"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
PATHS = [
    (*prefix, key)
    for prefix, cls in [
        (("session", "maintenance"), m.MaintenanceConfig),
        (("session", "writeLock"), m.WriteLockConfig),
        (("session",), m.SessionConfig),
        (("session", "resetByType", "group"), m.ResetConfig),
        (("agents", "defaults", "compaction"), m.CompactionConfig),
        (("agents", "defaults", "compaction", "memoryFlush"), m.MemoryFlushConfig),
        (("agents", "defaults"), m.AgentDefaultsConfig),
        (("agents",), m.AgentsConfig),
        (("agents", "entries", "ops"), m.AgentEntryConfig),
        (("cron",), m.CronConfig),
        (("gateway",), m.GatewayConfig),
        (("gateway", "auth"), m.GatewayAuthConfig),
    ]
    for key in sorted(cls.keys())
]


def _nest(path: tuple[str, ...], value: object) -> dict:
    out: object = value
    for key in reversed(path):
        out = {key: out}
    return out  # type: ignore[return-value]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(PATHS), JSON_VALUES), max_size=4))
def test_any_value_anywhere_is_a_config_error_or_valid(assignments):
    raw: dict = {}
    for path, value in assignments:
        node = raw
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else node
        node[path[-1]] = value
    try:
        loaded = validate_config(raw, CONFIG)
        assert loaded.valid
    except ConfigError as error:
        assert error.issues and all(i["path"] and i["message"] for i in error.issues)
    lenient = validate_config(raw, CONFIG, strict=False)
    maintenance_settings(lenient)
    write_lock_settings(lenient, env={})


# ---------------------------------------------------------------------------------------------
# Parsing


def test_deeply_nested_plain_json_is_a_config_error():
    # orjson refuses it, JSON5 runs out of stack: one clear error either way.
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_config_bytes(b"[" * 100_000 + b"]" * 100_000, CONFIG)


# ---------------------------------------------------------------------------------------------
# Start-up cost: what a command imports to load its config

PROBE = """
import json, sys
from openclaw_cli.paths import resolve_paths
from openclaw_cli.config import load_config, maintenance_settings, write_lock_settings
loaded = load_config(resolve_paths())
maintenance_settings(loaded); write_lock_settings(loaded)
names = ["pydantic", "json5", "orjson", "typing", "uuid", "openclaw_cli.config.model",
         "openclaw_cli.config.units", "openclaw_cli.config.legacy_keys", "openclaw_cli.config.examples",
         "openclaw_cli.config.resolve_compaction", "openclaw_cli.config.resolve_cron",
         "openclaw_cli.config.resolve_reset", "openclaw_cli.config.resolve_gateway"]
print(json.dumps({"loaded": [n for n in names if n in sys.modules], "max_entries":
                  maintenance_settings(loaded).max_entries, "exists": loaded.exists}))
"""


def _probe(config: Path, text: str | None) -> dict:
    if text is not None:
        config.write_text(text)
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


LAZY_SETTINGS = {
    "openclaw_cli.config.resolve_compaction",
    "openclaw_cli.config.resolve_cron",
    "openclaw_cli.config.resolve_reset",
    "openclaw_cli.config.resolve_gateway",
}


def test_missing_config_loads_no_parser_and_no_validation_machinery(isolated_env):
    found = _probe(isolated_env["config"], None)
    # The defaults object needs the section classes, nothing else: no parser, no warnings rules.
    assert found == {
        "loaded": ["openclaw_cli.config.model", "openclaw_cli.config.units"],
        "max_entries": 500,
        "exists": False,
    }


def test_plain_json_config_loads_neither_pydantic_nor_json5(isolated_env):
    found = _probe(
        isolated_env["config"], '{"session": {"maintenance": {"mode": "enforce", "maxEntries": 5000}}}'
    )
    loaded = set(found["loaded"])
    assert {"orjson", "openclaw_cli.config.model", "openclaw_cli.config.legacy_keys"} <= loaded
    assert not loaded & {"pydantic", "json5", "typing", "openclaw_cli.config.examples", *LAZY_SETTINGS}
    assert found["max_entries"] == 5000 and found["exists"] is True


def test_json5_config_loads_json5_only(isolated_env):
    found = _probe(isolated_env["config"], "// comment\n{session: {maintenance: {maxEntries: 7,},},}")
    assert "json5" in found["loaded"] and "pydantic" not in found["loaded"]
    assert found["max_entries"] == 7


def test_invalid_config_loads_the_examples_but_not_pydantic(isolated_env):
    isolated_env["config"].write_text('{"session": {"maintenance": {"maxEntries": 0}}}')
    code = (
        "import sys\nfrom openclaw_cli.config import load_config\nfrom openclaw_cli.errors import ConfigError\n"
        "try:\n    load_config(sys.argv[1])\nexcept ConfigError as e:\n    print(e.issues[0]['message'])\n"
        "print('pydantic' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(isolated_env["config"])], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.splitlines() == ["0 (must be positive). Example: 500", "False"]


def test_no_config_module_imports_pydantic():
    root = Path(m.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import pydantic" not in text and "from pydantic" not in text, path.name


def test_lazy_names_resolve_from_the_package():
    import openclaw_cli.config as config
    from openclaw_cli.config import resolve

    for name in config.__all__:
        assert getattr(config, name) is not None
    for name in resolve.LAZY_NAMES:
        assert getattr(resolve, name) is getattr(config, name)
    with pytest.raises(AttributeError):
        _ = config.no_such_name
    with pytest.raises(AttributeError):
        _ = resolve.no_such_name
    assert math.isinf(
        config.write_lock_settings(
            {"session": {"writeLock": {"acquireTimeoutMs": "Infinity"}}}, env={}
        ).acquire_timeout_ms
    )
