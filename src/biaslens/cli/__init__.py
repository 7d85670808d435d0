"""The ``biaslens`` command line: a thin layer over :mod:`biaslens.runner` and the library.

One module per method family (:mod:`.sib`, :mod:`.lei`, :mod:`.cid`), the reports and the app
(:mod:`.reports`), and the catalogues of models, datasets and methods (:mod:`.catalog`); shared
options in :mod:`.options`, output in :mod:`.render`.

Every user error is printed as one line (``error: ...``) with exit code 2; Ctrl-C prints how to
resume and exits 130; nothing is printed as a traceback unless it is a bug.
"""

from __future__ import annotations

import os
import signal
import sys

import typer

from biaslens.cli import catalog, cid, lei, methods, reports, sib
from biaslens.cli.options import expand_argv
from biaslens.cli.render import console, err_console, print_error
from biaslens.errors import BiaslensError
from biaslens.version import __version__

app = typer.Typer(
    help=(
        "biaslens: audit language models for social bias and spurious correlations by "
        "intervening on their inputs and measuring how their outputs move.\n\n"
        "Start with `biaslens run sib-mgc --model default` (SIB Method 1 on the MGC set with the "
        "offline SmolLM2-135M-Instruct)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts hold [subj], [MASK]: shown as written, never markup
)
run_app = typer.Typer(
    help="Run a method and write a run directory.", no_args_is_help=True, rich_markup_mode=None
)
metrics_app = typer.Typer(
    help="Score stored model outputs.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(run_app, name="run")
app.add_typer(metrics_app, name="metrics")


def _version(value: bool) -> None:
    if value:
        console.print(f"biaslens {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """biaslens command line."""


methods.register(run_app)
sib.register(run_app, metrics_app)
lei.register(run_app, metrics_app)
cid.register(app, run_app)
reports.register(app)
catalog.register(app)

INTERRUPTED_HINT = (
    "interrupted: finished requests are kept in the run's cache; run the same command again to "
    "resume"
)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors with exit code 2, a resume hint on Ctrl-C (exit 130)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    interrupted = []

    def on_interrupt(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, on_interrupt)
    except ValueError:  # not the main thread: leave the handler as it is
        previous = None
    command = typer.main.get_command(app)
    try:
        code = command.main(
            args=expand_argv(list(sys.argv[1:] if argv is None else argv)),
            prog_name="biaslens",
            standalone_mode=False,
        )
    except BiaslensError as error:
        print_error(str(error))
        sys.exit(2)
    except typer.Abort:
        err_console.print(INTERRUPTED_HINT)
        sys.exit(130)
    except OSError as error:  # the file system refused a path (too long, read-only, full disk)
        where = f"{error.filename}: " if error.filename else ""
        print_error(f"{where}{error.strerror or error}")
        sys.exit(2)
    except typer.TyperException as error:  # click's usage errors (typer ships its own click)
        hint = ""
        context = getattr(error, "ctx", None)
        if context is not None:
            hint = f" (see `{context.command_path} --help`)"
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        print_error(f"{message}{hint}")
        sys.exit(getattr(error, "exit_code", 2))
    except KeyboardInterrupt:
        err_console.print(INTERRUPTED_HINT)
        sys.exit(130)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        err_console.print(INTERRUPTED_HINT)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
