"""The CLI's progress factory (`progress.ProgressFactory`): a transient Rich bar per task on
stderr, only on an interactive terminal and never under `--json`."""

from __future__ import annotations

from openclaw_cli.progress import ProgressFactory, Tick


def progress_factory(json_mode: bool) -> ProgressFactory | None:
    from openclaw_cli.output import stderr_console

    if json_mode or not stderr_console().is_interactive:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    def factory(description: str, total: int) -> Tick:
        prog = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr_console(),
            transient=True,
        )
        prog.start()
        task = prog.add_task(description, total=total)

        def tick(n: int) -> None:
            prog.advance(task, n)

        tick.close = prog.stop  # type: ignore[attr-defined]  # called when the task ends
        return tick

    return factory
