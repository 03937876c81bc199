"""Shell completion values (`openclaw --install-completion` / `--show-completion`, Typer's, for
bash, zsh and fish): agent ids from the config and the state dir, session keys from the selected
agent's local store. Loaded only when the shell asks (never by `openclaw --help`); a completion
never fails loudly: any problem completes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openclaw_cli.ops.context import Context

MAX_KEYS = 200


def _params(ctx: Any) -> dict[str, Any]:
    """Options given so far, this command's first, then its parents'."""
    merged: dict[str, Any] = {}
    while ctx is not None:
        for name, value in (getattr(ctx, "params", None) or {}).items():
            if merged.get(name) is None and value not in (None, False, ()):
                merged[name] = value
        ctx = ctx.parent
    return merged


def _context() -> Context:
    from openclaw_cli.ops.context import Context
    from openclaw_cli.paths import resolve_paths

    return Context.load(resolve_paths(), strict=False)


def agent_ids(ctx: Any, incomplete: str) -> list[str]:
    try:
        from openclaw_cli.ops.targets import known_agent_ids

        cx = _context()
        return [a for a in known_agent_ids(cx.paths, cx.config) if a.startswith(incomplete.strip().lower())]
    except Exception:  # completion must never print a traceback into the shell
        return []


def session_keys(ctx: Any, incomplete: str) -> list[str]:
    try:
        from openclaw_cli.keys import parse_agent_key
        from openclaw_cli.ops.targets import open_target, select_targets

        params = _params(ctx)
        cx = _context()
        agent = params.get("agent")
        parsed = parse_agent_key(incomplete + "x")  # `agent:work:` names its agent already
        if agent is None and params.get("store") is None and parsed:
            agent = parsed[0]
        target = select_targets(
            cx.paths, cx.config, agent=agent, all_agents=False, store=params.get("store")
        )[0]
        with open_target(cx, target, read_only=True) as st:
            rows, _ = st.list_entries(limit=None)
        keys = [key for key, _ in rows if key.startswith(incomplete)]
        return keys[:MAX_KEYS]
    except Exception:
        return []


# Typer's bash script hands bash's words to the program as they are, and bash splits words at every
# character of COMP_WORDBREAKS, ':' included: `openclaw sessions archive agent:main:tel<Tab>` asked
# for completions of `tel` and found none (issue 29). This one sends the command line up to the
# cursor instead (the program splits it as a shell would; a trailing space means a new, empty word),
# then strips from each completion the part of the typed word up to its last ':' (readline replaces
# only what follows it) — the `__ltrim_colon_completions` approach of bash-completion, done here so
# that it works without that package. Called without COMP_LINE (a
# script setting COMP_WORDS itself) it uses those words. `%%` is a literal `%` (%-formatting).
BASH_SCRIPT = r"""
%(complete_func)s() {
    local line
    if [[ -n "${COMP_LINE-}" ]]; then
        line="${COMP_LINE:0:COMP_POINT}"
    else
        line="${COMP_WORDS[*]:0:COMP_CWORD+1}"
    fi
    local IFS=$'\n'
    local args="$line"
    [[ "$line" == *[[:space:]] || -z "$line" ]] && args="$line ''"
    COMPREPLY=( $( env COMP_WORDS="$args" \
                   COMP_CWORD=-1 \
                   %(autocomplete_var)s=complete_bash $1 ) )
    local cur="${line##*[[:space:]]}"
    # bash split the typed word at ':' (its current word is not the whole of it): readline replaces
    # only the text after the last ':', so that part is stripped from each completion
    if [[ "$cur" == *:* && "$COMP_WORDBREAKS" == *:* && "${COMP_WORDS[COMP_CWORD]-}" != "$cur" ]]; then
        local prefix="${cur%%"${cur##*:}"}"
        local i=${#COMPREPLY[*]}
        while [[ $((--i)) -ge 0 ]]; do
            COMPREPLY[$i]="${COMPREPLY[$i]#"$prefix"}"
        done
    fi
    return 0
}

complete -o default -F %(complete_func)s %(prog_name)s
"""


def use_colon_safe_bash_script() -> None:
    """Make `--show-completion` / `--install-completion` for bash emit `BASH_SCRIPT`."""
    from typer import _completion_classes, _completion_shared

    _completion_shared._completion_scripts["bash"] = BASH_SCRIPT  # noqa: SLF001
    _completion_classes.BashComplete.source_template = BASH_SCRIPT
