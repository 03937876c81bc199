"""The legacy → SQLite migration: `openclaw doctor --session-sqlite <mode>` (spec D13, D14, D6).

`engine.run(Options(mode=...))` is the library entry point; it returns a `report.Report` whose
`to_json()` / `render_text()` / `exit_code` the CLI prints.
"""
