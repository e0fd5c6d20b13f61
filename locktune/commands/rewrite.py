"""`locktune rewrite`: extract critical sections and retarget locks to liblocktune."""

from __future__ import annotations

from pathlib import Path

import click

from locktune import ui
from locktune.errors import LocktuneError, UsageProblem


def _wrapper(_ctx, _param, values: tuple[str, ...]) -> dict[str, str]:
    from locktune.rewrite.wrappers import ROLES

    out = {}
    for v in values:
        name, _, spec = v.partition("=")
        role, _, expr = spec.partition(":")
        if not name.isidentifier() or role not in ROLES or (spec.count(":") and not expr):
            raise click.BadParameter(
                f"{v!r}: expected NAME=lock, NAME=unlock or NAME=trylock, optionally followed "
                "by :EXPR, the lock it takes with $1, $2... for its arguments"
            )
        out[name] = spec
    return out


@click.command("rewrite")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write a rewritten copy of the source tree here "
    "(default: SOURCE_ROOT-locktune next to it).",
)
@click.option(
    "--in-place",
    is_flag=True,
    help="Rewrite the files themselves; needs a git tree without uncommitted changes.",
)
@click.option(
    "--allow-dirty",
    is_flag=True,
    help="With --in-place: rewrite even without git or with uncommitted changes.",
)
@click.option(
    "--profile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="PROFILE",
    help="profile.json whose figures and recommended algorithms go into locktune_config.h.",
)
@click.option(
    "--compile-commands",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help="compile_commands.json giving each file's real compile flags (CMake, bear -- make).",
)
@click.option(
    "--source-root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="Root that site paths are relative to (default: the common parent of the inputs).",
)
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write the rewrite report here (JSON, schema locktune-rewrite/1).",
)
@click.option(
    "--cflags",
    default="",
    metavar='"..."',
    help="Compile flags for every file when there is no compile_commands.json.",
)
@click.option(
    "--lock-wrapper",
    "lock_wrappers",
    multiple=True,
    callback=_wrapper,
    metavar="NAME=ROLE",
    help="A project function or macro that locks (ROLE lock), unlocks or trylocks a lock, "
    "e.g. item_lock=lock, or item_lock=lock:&item_locks[$1 & mask] to say which lock it takes "
    "from its arguments.  Repeatable.  Common macro shapes are recognised without it.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Write the output even when some files could not be analysed: their locks are "
    "retargeted by token and their sections kept (the exit status is still 1).",
)
@click.option(
    "--retarget-by",
    type=click.Choice(["auto", "coccinelle", "token"]),
    default="auto",
    show_default=True,
    help="How pthread names and sites are retargeted: the semantic patches (Coccinelle), "
    "by token, or auto (Coccinelle up to 5000 lines per file, by token beyond).  A file "
    "Coccinelle fails on is always retargeted by token, with a note.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report on stdout as JSON.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def command(
    out_dir, in_place, allow_dirty, profile, compile_commands, source_root, report_file,
    cflags, lock_wrappers, keep_going, retarget_by, as_json, paths,
) -> None:  # fmt: skip
    """Rewrite the C files and headers in FILE_OR_DIR... for liblocktune.

    \b
    Each critical section becomes a function run by lt_execute (Clang, locktune-extract);
    pthread mutex and condition-variable types, initialisers and calls move to the lt_ API
    (Coccinelle); locktune_config.h gets one entry per lock site, where you choose the
    algorithm.  The input tree is never modified unless --in-place is given.  A file that
    cannot be analysed with its compile command is an error (file:line) and nothing is
    written (exit status 1); with --keep-going the rest is written and that file's locks
    are retargeted by token, so the output stays one consistent program.  Running the
    command again on its output changes nothing.

    \b
    Example:
      bear -- make
      locktune rewrite --compile-commands compile_commands.json --profile profile.json src/
      make -C src-locktune CFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)"
    """
    from locktune.rewrite import engine, report

    if out_dir is not None and in_place:
        raise UsageProblem("--out and --in-place exclude each other")
    if allow_dirty and not in_place:
        raise UsageProblem("--allow-dirty only makes sense with --in-place")
    opts = engine.Options(
        paths=list(paths),
        out=out_dir,
        in_place=in_place,
        allow_dirty=allow_dirty,
        profile=profile,
        compile_commands=compile_commands,
        source_root=source_root,
        cflags=cflags,
        lock_wrappers=lock_wrappers,
        keep_going=keep_going,
        retarget_by=retarget_by,
    )
    try:
        result = engine.run(opts, progress=ui.progress)
    finally:
        ui.progress_done()
    if report_file is not None:
        report.write(result.report, report_file)
    if as_json:
        click.echo(report.dumps(result.report), nl=False)
    else:
        click.echo(report.summary_text(result.report, str(report_file) if report_file else None))
    # A profiled site no lock in the sources matches: its figures reach no header entry.
    # Said on stderr, one line each (the summary counts them); the rewrite itself stands.
    # A hot one in a file the rewrite analysed is an error (exit 1, the output written).
    lost = {x["site"]: x for x in result.report.get("profile_sites_lost", [])}
    for where in result.report.get("profile_sites_not_found", []):
        what = "error" if where in lost else "warning"
        hot = (
            f" (recommended {lost[where]['algorithm']}, {lost[where]['cs_percent']}% of "
            "thread time in its critical sections)"
            if where in lost
            else ""
        )
        click.echo(
            f"locktune rewrite: {what}: {where}: profiled lock site{hot} matches no lock "
            "initialisation or definition in the sources; its profile is not used "
            "(docs/rewrite.md)",
            err=True,
        )
    if result.errors:
        for e in result.errors[:-1]:
            click.echo(f"locktune rewrite: error: {e}", err=True)
        n = len(result.errors)
        done = (
            "the others written, these retargeted by token"
            if keep_going
            else "nothing written (--keep-going writes the others)"
        )
        raise LocktuneError(f"{result.errors[-1]} [{n} file(s) not analysed; {done}]")
    if lost:
        raise LocktuneError(
            f"{len(lost)} hot profiled site(s) match no lock in the rewritten files: the "
            "profile and the sources disagree (a stale profile?); the output is written, "
            "without their recommended algorithms"
        )
