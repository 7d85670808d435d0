"""The ``biaslens`` command line: a thin layer over :mod:`biaslens.runner` and the library.

Every command is built from declarations (:mod:`.params`): ``biaslens run METHOD`` (and a
method's shortcut, ``biaslens cid``) from the method's options and the backends'
(:mod:`.methods`, :mod:`.backends`), the commands a method adds from its registry entry
(:mod:`.metrics`: ``biaslens metrics …`` and top-level ones), the others from their own
(:mod:`.reports` for the report, comparisons and the app, :mod:`.catalog` for the catalogues of
models, datasets and methods and the exports); output in :mod:`.render`.

Every user error is printed as one line (``error: ...``) with exit code 2; Ctrl-C prints how to
resume and exits 130; nothing is printed as a traceback unless it is a bug.
"""

from __future__ import annotations

import os
import signal
import sys

import click

from biaslens.cli import cards, catalog, methods, metrics, reports
from biaslens.cli.render import console, err_console, print_error
from biaslens.errors import BiaslensError
from biaslens.version import __version__

CONTEXT = {"help_option_names": ["--help"], "max_content_width": 100}


def _version(ctx: click.Context, param, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        console.print(f"biaslens {__version__}")
        ctx.exit()


def group(name: str, help: str, build=None) -> click.Group:
    """A command group that shows its help when called alone (``build``: a function returning
    its commands, built when first asked for)."""
    if build is not None:
        return metrics.LazyGroup(
            name, help=help, no_args_is_help=True, context_settings=CONTEXT, build=build
        )
    return click.Group(name, help=help, no_args_is_help=True, context_settings=CONTEXT)


app = methods.RootGroup(
    "biaslens",
    no_args_is_help=True,
    context_settings=CONTEXT,
    help="biaslens: audit language models for social bias and spurious correlations by intervening "
    "on their inputs and measuring how their outputs move.\n\nStart with `biaslens audit --model "
    "default --size quick` (every method that applies to the offline SmolLM2-135M-Instruct, into "
    "one bias card).",
)
app.params.append(
    click.Option(
        ["--version"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_version,
        help="Print the version and exit.",
    )
)
run_group = methods.RunGroup(
    "run",
    help="Run a method and write a run directory.",
    no_args_is_help=True,
    context_settings=CONTEXT,
)
metrics_group = group(
    "metrics",
    "Score stored model outputs.",
    lambda: [
        metrics.click_command(*found) for found in metrics.method_commands("metrics").values()
    ],
)
app.add_command(run_group)
app.add_command(metrics_group)
reports.register(app)
card_group = group("card", "Publish a bias card.")
card_group.add_command(cards.card_push)
app.add_command(card_group)
app.add_lazy("audit", lambda: __import__("biaslens.cli.audit", fromlist=["_"]).audit_command())
catalog.register(app, group)

INTERRUPTED_HINT = (
    "interrupted: finished requests are kept in the run's cache; run the same command again to "
    "resume"
)


def usage_error(error: click.ClickException) -> str:
    """A usage error in one line: a bad value as ``--flag: what is wrong`` (as a setting's),
    with where to read the command's options."""
    message = error.format_message()
    param = getattr(error, "param", None)
    if isinstance(error, click.BadParameter) and param is not None and error.message:
        where = param.opts[0] if param.param_type_name == "option" else param.human_readable_name
        message = f"{where}: {error.message}"
    context = getattr(error, "ctx", None)
    hint = f" (see `{context.command_path} --help`)" if context is not None else ""
    return f"{message}{hint}"


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
    try:
        code = app.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="biaslens",
            standalone_mode=False,
        )
    except BiaslensError as error:
        print_error(str(error))
        sys.exit(2)
    except click.exceptions.Abort:
        err_console.print(INTERRUPTED_HINT)
        sys.exit(130)
    except OSError as error:  # the file system refused a path (too long, read-only, full disk)
        where = f"{error.filename}: " if error.filename else ""
        print_error(f"{where}{error.strerror or error}")
        sys.exit(2)
    except click.exceptions.NoArgsIsHelpError as error:  # a group called alone: its help
        click.echo(error.ctx.get_help())
        sys.exit(error.exit_code)
    except click.ClickException as error:  # usage errors: a bad option or value
        print_error(usage_error(error))
        sys.exit(error.exit_code)
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
