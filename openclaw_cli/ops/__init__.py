"""The operations layer (spec D9): one function per operation, shared by the CLI and the Gateway.

Every operation takes a `Context` (`ops.context`) and returns OpenClaw's JSON document; the
method table (`ops.methods.METHODS`) maps Gateway method names to them. Modules by family:
`sessions` (list, tail, resolve), `cleanup`, `compact`, `agents`, `status` (status, health),
`doctor` (plain doctor checks and the `--session-sqlite` migration entry), `targets` (the one
target selection), `rows` (listing rows). Front ends (`cli/`, `gateway/`) call only this layer;
domain packages (`maintenance`, `compaction`, `migration`) never import it.
This `__init__` imports nothing: the CLI imports the modules it needs (start-up time).
"""
