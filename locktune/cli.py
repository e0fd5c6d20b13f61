"""The `locktune` command: one click group, one module per subcommand (locktune/commands/).

Every error leaves as one line on stderr, ``locktune SUBCOMMAND: error: WHAT``, with exit
status 1 when the work failed and 2 on bad usage (DESIGN.md, "The command line").
"""

from __future__ import annotations

import sys

import click

from locktune import __version__
from locktune.commands import bench, calibrate, doctor, flags, profile, report, rewrite
from locktune.errors import LocktuneError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class LocktuneGroup(click.Group):
    """A group whose failures are one line on stderr, never a traceback or a usage dump."""

    def main(self, args=None, prog_name="locktune", **extra):  # noqa: D401 - click signature
        args = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # click >= 8.2: bare group prints help
            click.echo(e.ctx.get_help())
            sys.exit(0)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else prog_name
            _fail(where, e.format_message(), 2)
        except LocktuneError as e:
            _fail(_command_path(args, prog_name), str(e), e.exit_code)
        except click.exceptions.Abort:
            _fail(prog_name, "aborted", 1)
        except click.ClickException as e:
            _fail(_command_path(args, prog_name), e.format_message(), e.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


def _command_path(args: list[str], prog_name: str) -> str:
    sub = next((a for a in args if not a.startswith("-")), None)
    return f"{prog_name} {sub}" if sub else prog_name


def _fail(where: str, message: str, code: int) -> None:
    one_line = " ".join(str(message).split())
    click.echo(f"{where}: error: {one_line}", err=True)
    sys.exit(code)


@click.group(cls=LocktuneGroup, context_settings=CONTEXT_SETTINGS, no_args_is_help=True)
@click.version_option(__version__, prog_name="locktune")
def cli() -> None:
    """Find the locks that hold a multithreaded C program back, rewrite their critical
    sections into functions, and run every lock on the algorithm that suits it.

    \b
    The pipeline:
      locktune profile -- ./app ARGS     measure every lock, per site  -> profile.json
      locktune report profile.json       rank the sites, recommend an algorithm each
      locktune rewrite --profile profile.json src/
                                         extract critical sections, write locktune_config.h
      cc ... $(locktune flags --cflags --libs)
                                         build the rewritten program against liblocktune
      locktune bench compare ...         original vs rewritten, side by side, as ratios

    Run `locktune doctor` first to see what this machine offers.
    """


for _module in (doctor, profile, report, rewrite, flags, bench, calibrate):
    cli.add_command(_module.command)


def main() -> None:
    cli.main()
