"""The legacy → SQLite migration: `openclaw doctor --session-sqlite <mode>` (spec D2–D6, D13, D14;
storage-migration.md §6).

`engine.run(Options(mode=...))` is the library entry point; it returns a `report.Report` whose
`to_json()` / `render_text()` / `exit_code` the CLI prints (`cli/doctor.py`).

Modules: `targets` (selection, §1.4/§6.2 mapping, §6.3 path guards), `legacy_reader` (strict
`sessions.json`, records, orphans), `importer` (the run), `verify` (validate before archive),
`publish` (identity, names, hard-link publication), `manifest` (v3 + `pathBase`), `validate`
(dry-run, validate), `inspect`, `compact`, `restore`, `recover`, `failure` (sanitised reports),
`ownership` (state-ownership lock), `dbinfo`, `report`, `context`, `engine`.

Decisions (where the spec leaves a choice):

- Lossless (D14): entries are stored exactly as read — `sessionFile` is *not* rewritten to a
  `sqlite:` marker and nothing is normalised; every transcript line is stored byte-exact without
  its `\\n` (a `\\r` before it stays part of the line). Blank lines are not events. A line the store
  cannot take (not a JSON object) ends the readable prefix: `transcript_malformed` (warning), the
  prefix is imported and the original archived byte-identical.
- Header-less (v1) transcripts are imported verbatim: no header is synthesised and no ids are
  rewritten (§3.10's id/header rewrites do not apply to us); readers treat id-less entries as
  linear history (§3.5). The archived original is byte-identical, so nothing is lost either way.
- Bare `cron:`/`hook:` keys become `agent:<target agent>:…`. If the canonical key also exists in
  the same index, the newer row (by `updatedAt`) keeps the key, the other is reported as
  `entry_alias_merged` (warning); its row stays in the archived `sessions.json` and, when it names
  another session, that transcript is still imported (as its own session window).
- A key already in SQLite keeps its stored entry unless the legacy row is newer by `updatedAt`
  (e.g. written by an older runtime after a restore); events are appended only when missing
  (the store's prefix-resume / id-merge), never truncated.
- Validate before archive compares, per session, the count and a sha256 over the stored lines read
  back from SQLite with the sha256 computed while the file was read (for a clean file that is the
  file's own sha256, so a file is read exactly once). A session whose history diverged is accepted
  only when every line is still present byte-identically (multiset check).
- `sessions.json` is archived only when every record is in SQLite with its sessionId, every
  referenced transcript was archived (or missing to begin with) and the index is unchanged since it
  was read; otherwise it stays and `legacy_store_archive_failed` (blocking) says why.
- Publication: exclusive hard link, fsync, inode/nlink/identity check, unlink, fsync — batched
  (one fsync per directory per batch). A kill between link and unlink leaves one inode with two
  names; the next import/restore drops the *extra* name (the source keeps the bytes) and redoes it.
- Manifests record planned moves before the first link; completed moves are written after each
  publication batch (at most three writes per target; the last batch's with the next manifest
  write). Recovery never depends on `completedMoves`. Manifests are never pruned: every artifact
  stays `retained` (we do not implement `openclaw update cleanup`).
- Destructive modes refuse with exit 5 (BUSY) while the state is owned (OpenClaw uses 1).
  Writing to a real OpenClaw database is refused: `import` raises (exit 7), `compact` reports
  `sqlite_compact_failed`. A corrupt database refuses `import` (exit 6) until `recover` moves it.
- `recover` restores a failed run's originals (restore rules), moves corrupt databases aside, and
  writes sanitised `<manifest>.failure.json` / `.failure.md` when issues remain. It never creates
  GitHub issues; `--github-issue` only names the report.
"""
