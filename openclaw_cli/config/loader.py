"""Read `openclaw.json` (JSON5), validate the keys we model, collect warnings (spec D10).

A missing file means defaults. A file that cannot be read or parsed, or whose root is not an
object, or that holds an invalid value for a modelled key, is a ConfigError (exit code CONFIG)
that names the file and, for values, every bad key with an example. `strict=False` (for
`status` and `doctor`, which must report a broken config rather than die on it) records the
problems in `LoadedConfig.errors` and uses defaults for the keys in error.

Start-up time matters (every command loads the config): a missing file builds the defaults
without parsing anything, json5 is imported only for files that are not plain JSON, and the
validation model, examples and warning rules only when a file exists.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from openclaw_cli.errors import ConfigError
from openclaw_cli.paths import StatePaths

TYPE_CHECKING = False  # `typing` costs start-up time; only type checkers need it here
if TYPE_CHECKING:
    from typing import Any

    from openclaw_cli.config.model import OpenClawConfig

# A config is a few KB. Refusing absurd sizes keeps a hostile file from exhausting memory or time:
# plain JSON is parsed by orjson (1 MiB in milliseconds), JSON5 by the pure-Python json5 parser at
# roughly 10-20 us a byte (an 8 MB JSON5 file took 85-100 s, issue 29 #8), so JSON5 gets less.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_JSON5_CONFIG_BYTES = 256 * 1024
_JSON5_POSITION = r"^<string>:(\d+) (.*) at column (\d+)$"  # compiled on first use
_SHOWN_VALUE_MAX = 80

# Keys of later OpenClaw releases that we recognise but do not implement (warned as unused).
_LATER_MAINTENANCE_KEYS = frozenset({"coldStorage"})


class LoadedConfig:
    """The config as loaded: the parsed file, the validated model and what was noticed.

    A plain class rather than a dataclass: creating a dataclass costs start-up time.
    """

    __slots__ = ("_model", "errors", "exists", "path", "raw", "warnings")
    _FIELDS = ("errors", "exists", "model", "path", "raw", "warnings")

    def __init__(
        self,
        path: Path,
        exists: bool,
        raw: dict[str, Any],
        model: OpenClawConfig | None,
        warnings: list[str] | None = None,
        errors: list[dict[str, str]] | None = None,  # only filled when strict=False
    ) -> None:
        self.path = path
        self.exists = exists
        self.raw = raw
        # None: every key at its default, the model built when first asked for (`defaults_only`)
        self._model = model
        self.warnings = [] if warnings is None else warnings
        self.errors = [] if errors is None else errors

    @property
    def model(self) -> OpenClawConfig:
        model = self._model
        if model is None:
            from openclaw_cli.config.model import OpenClawConfig

            model = self._model = OpenClawConfig()
        return model

    @model.setter
    def model(self, model: OpenClawConfig) -> None:
        self._model = model

    @property
    def defaults_only(self) -> bool:
        """Nothing set (no file): the model is `OpenClawConfig()`'s defaults and not built yet, so
        `config.resolve` answers the settings a read needs from the defaults without building it
        (the model module and its ~100 section objects: ~5 M instructions of a search's start)."""
        return self._model is None

    def __repr__(self) -> str:
        return (
            f"LoadedConfig(path={self.path!r}, exists={self.exists!r}, raw={self.raw!r}, model={self.model!r}, "
            f"warnings={self.warnings!r}, errors={self.errors!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not LoadedConfig:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    @property
    def valid(self) -> bool:
        return not self.errors


# --------------------------------------------------------------------------------------------
# Reading and parsing


def read_config_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist. Other failures are ConfigErrors: only a
    regular file is read (a FIFO would block every command, a device never ends; issue 29 #8) —
    a symbolic link to one is fine — and never more than MAX_CONFIG_BYTES."""
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigError(f"Cannot read config file {path}: {reason}.", path=str(path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"Cannot read config file {path}: it is a directory.", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        from openclaw_cli.fsio import file_kind  # only on this refusal (fsio is not on the read path)

        raise ConfigError(
            f"Cannot read config file {path}: it is not a regular file ({file_kind(st.st_mode)}). "
            "Point OPENCLAW_CONFIG_PATH at a JSON5 file.",
            path=str(path),
        )
    if st.st_size > MAX_CONFIG_BYTES:
        raise _too_big(path, st.st_size)
    try:
        # O_NONBLOCK: a FIFO swapped in after the check must not block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigError(f"Cannot read config file {path}: {reason}.", path=str(path)) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"Cannot read config file {path}: it is not a regular file.", path=str(path))
        try:
            data = fh.read(MAX_CONFIG_BYTES + 1)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise ConfigError(f"Cannot read config file {path}: {reason}.", path=str(path)) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise _too_big(path, len(data))
    return data


def _too_big(path: Path, size: int) -> ConfigError:
    return ConfigError(
        f"Cannot read config file {path}: it is {size:,} bytes, over the {MAX_CONFIG_BYTES // 1024:,} KiB limit "
        "(a config is a few KB). Nothing was read.",
        path=str(path),
    )


def _parse_failure(path: Path, detail: str) -> ConfigError:
    return ConfigError(f"Failed to parse config file {path}: {detail}", path=str(path))


def _json5_detail(error: Exception) -> str:
    text = str(error)
    match = re.match(_JSON5_POSITION, text, re.DOTALL)
    if match:
        line, what, column = match.groups()
        return f"line {line}, column {column}: {what}."
    return text if text.endswith(".") else f"{text}."


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def parse_config_bytes(data: bytes, path: Path) -> dict[str, Any]:
    """Parse JSON5 bytes into the root object (empty file -> {})."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _parse_failure(path, f"not UTF-8 text (invalid byte at offset {error.start}).") from None
    if not text.strip():
        return {}
    import orjson  # every command that reads a session store loads it anyway

    try:
        value = orjson.loads(text)  # fast path: most configs are plain JSON
    except orjson.JSONDecodeError:
        if len(data) > MAX_JSON5_CONFIG_BYTES:
            raise _parse_failure(
                path,
                f"it is not plain JSON, and JSON5 (comments, unquoted keys, trailing commas) is only parsed up to "
                f"{MAX_JSON5_CONFIG_BYTES // 1024} KiB ({len(data):,} bytes here; parsing that much JSON5 takes "
                "minutes). Write it as plain JSON, or make it smaller.",
            ) from None
        import json5

        try:
            value = json5.loads(text)
        except RecursionError:
            raise _parse_failure(path, "nested too deeply.") from None
        except Exception as error:  # json5 raises ValueError, but be safe with hostile input
            raise _parse_failure(path, _json5_detail(error)) from None
    if not isinstance(value, dict):
        kind = _json_kind(value)
        raise ConfigError(
            f"Invalid config file {path}: the top level must be a JSON object, found {kind}.",
            path=str(path),
        )
    return value


# --------------------------------------------------------------------------------------------
# Validation


def _show_value(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except Exception:  # not JSON (a Python caller's value), or nested too deeply to print
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    if len(text) > _SHOWN_VALUE_MAX:
        text = text[: _SHOWN_VALUE_MAX - 1] + "…"
    return text


def _path_text(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def make_issue(
    loc: tuple[str | int, ...], reason: str, value: Any = None, *, missing: bool = False
) -> dict[str, str]:
    from openclaw_cli.config.examples import example_for

    example = example_for(loc)
    message = reason if missing else f"{_show_value(value)} ({reason})"
    if example is not None:
        message += f". Example: {example}"
    return {"path": _path_text(loc), "message": message}


def issue_sentence(issue: dict[str, str]) -> str:
    return f"Invalid config value at {issue['path']}: {issue['message']}"


def config_error(issues: list[dict[str, str]], path: Path) -> ConfigError:
    lines = [issue_sentence(issue) for issue in issues]
    lines.append(f"Config file: {path}")
    return ConfigError("\n".join(lines), issues=issues, path=str(path))


def _extra_checks(raw: dict[str, Any]) -> list[dict[str, str]]:
    """Rules the field tables do not express: `agents.list[].id` must be a non-blank string."""
    issues: list[dict[str, str]] = []
    agents = raw.get("agents")
    items = agents.get("list") if isinstance(agents, dict) else None
    if isinstance(items, list):
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                continue  # reported by the model
            loc = ("agents", "list", index, "id")
            if "id" not in item or item["id"] is None:
                issues.append(make_issue(loc, "required key is missing", missing=True))
            elif isinstance(item["id"], str) and not item["id"].strip():
                issues.append(make_issue(loc, "must not be blank", item["id"]))
    return issues


def _validate(
    raw: dict[str, Any],
) -> tuple[OpenClawConfig | None, list[dict[str, str]], list[tuple[Any, ...]]]:
    """The model (None when any modelled value is bad), every issue, and the bad values' paths."""
    from openclaw_cli.config.model import build_config

    model, found = build_config(raw)
    issues = [make_issue(loc, reason, value) for loc, reason, value in found]
    locs = [loc for loc, _, _ in found]
    return (None if found else model), [*issues, *_extra_checks(raw)], locs


def _drop_paths(raw: dict[str, Any], locs: list[tuple[Any, ...]]) -> dict[str, Any]:
    """A copy of `raw` without the values at `locs` (so defaults apply to keys in error)."""
    import copy

    out = copy.deepcopy(raw)
    # Deepest and highest list indices first, so earlier removals do not shift later ones.
    for loc in sorted(locs, key=lambda loc: (len(loc), [str(p).zfill(12) for p in loc]), reverse=True):
        node: Any = out
        for part in loc[:-1]:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        if node is None or not loc:
            continue
        try:
            del node[loc[-1]]
        except (KeyError, IndexError, TypeError):
            pass
    return out


# --------------------------------------------------------------------------------------------
# Warnings


def _unknown_key_warnings(raw: dict[str, Any]) -> list[str]:
    from openclaw_cli.config.model import COMPACTION_KEYS, COMPACTION_NESTED_KEYS, MAINTENANCE_KEYS

    warnings: list[str] = []
    session = raw.get("session")
    maintenance = session.get("maintenance") if isinstance(session, dict) else None
    if isinstance(maintenance, dict):
        for key in maintenance:
            if key in MAINTENANCE_KEYS:
                continue
            if key in _LATER_MAINTENANCE_KEYS:
                warnings.append(
                    f"session.maintenance.{key} belongs to a later OpenClaw release and is ignored by openclaw-cli."
                )
            else:
                warnings.append(f"Unknown key session.maintenance.{key} is ignored.")
    agents = raw.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    compaction = defaults.get("compaction") if isinstance(defaults, dict) else None
    if isinstance(compaction, dict):
        for key, value in compaction.items():
            if key not in COMPACTION_KEYS:
                warnings.append(f"Unknown key agents.defaults.compaction.{key} is ignored.")
            elif key in COMPACTION_NESTED_KEYS and isinstance(value, dict):
                for sub in value:
                    if sub not in COMPACTION_NESTED_KEYS[key]:
                        warnings.append(f"Unknown key agents.defaults.compaction.{key}.{sub} is ignored.")
    return warnings


def _value_warnings(model: OpenClawConfig) -> list[str]:
    """Values that are valid but do something the user may not expect."""
    warnings: list[str] = []
    m = model.session.maintenance
    if m.prune_after == 0 or (m.prune_after is None and m.prune_days == 0):
        warnings.append(
            "session.maintenance.pruneAfter is a zero duration; age-based pruning is disabled "
            '(use a duration such as "30d" to enable it).'
        )
    if m.reset_archive_retention == 0 and m.reset_archive_retention is not False:
        warnings.append(
            "session.maintenance.resetArchiveRetention is a zero duration; reset and deleted transcript "
            'archives are kept (write false to say so, or a duration such as "14d").'
        )
    if m.max_disk_bytes == 0 and m.max_disk_bytes is not False:
        warnings.append(
            "session.maintenance.maxDiskBytes is 0; the disk budget is disabled (write false to say so)."
        )
    if m.high_water_bytes == 0:
        warnings.append("session.maintenance.highWaterBytes is 0; the default (80% of maxDiskBytes) is used.")
    return warnings


def collect_warnings(raw: dict[str, Any], model: OpenClawConfig) -> list[str]:
    from openclaw_cli.config.legacy_keys import legacy_key_findings

    return [*legacy_key_findings(raw), *_unknown_key_warnings(raw), *_value_warnings(model)]


# --------------------------------------------------------------------------------------------
# Entry points


def validate_config(raw: dict[str, Any], path: Path, *, strict: bool = True) -> LoadedConfig:
    """Validate an already parsed config (also used by tests and by `config` tooling)."""
    from openclaw_cli.config.model import OpenClawConfig

    model, issues, locs = _validate(raw)
    if issues and strict:
        raise config_error(issues, path)
    if model is None or issues:
        try:
            model, _, _ = _validate(_drop_paths(raw, locs))
        except Exception:  # never let the fallback itself fail
            model = None
        if model is None:
            model = OpenClawConfig()
    return LoadedConfig(
        path=path, exists=True, raw=raw, model=model, warnings=collect_warnings(raw, model), errors=issues
    )


def default_config(path: Path) -> LoadedConfig:
    """No file: every key at its default (the model built on first use)."""
    return LoadedConfig(path=path, exists=False, raw={}, model=None)


def load_config(
    paths: StatePaths | Path, *, strict: bool = True, ignore_errors: bool = False
) -> LoadedConfig:
    """Load the config at `paths.config_path` (or a plain path).

    strict=True (commands that act on the config): any problem raises ConfigError.
    strict=False, or ignore_errors=True (`status`, `doctor`): problems land in `errors`;
    defaults fill the gaps.
    """
    strict = strict and not ignore_errors
    path = Path(paths.config_path if isinstance(paths, StatePaths) else paths)
    try:
        data = read_config_bytes(path)
        if data is None:
            return default_config(path)
        raw = parse_config_bytes(data, path)
    except ConfigError as error:
        if strict:
            raise
        loaded = default_config(path)
        loaded.exists = path.exists()
        loaded.errors = [{"path": "", "message": error.message}]
        return loaded
    loaded = validate_config(raw, path, strict=strict)
    if not data.strip():
        loaded.warnings.insert(0, f"Config file {path} is empty; defaults apply.")
    return loaded
