"""`locktune flags`: compile and link flags for rewritten code."""

from __future__ import annotations

import click

from locktune import native


@click.command("flags")
@click.option("--cflags", "want_cflags", is_flag=True, help="Print the compiler flags (-I...).")
@click.option(
    "--libs", "want_libs", is_flag=True, help="Print the linker flags (-L... -llocktune)."
)
@click.option("--static", is_flag=True, help="Link liblocktune.a instead of the shared library.")
@click.option(
    "--pkg-config-path", "want_pc", is_flag=True, help="Print the directory holding locktune.pc."
)
def command(want_cflags: bool, want_libs: bool, static: bool, want_pc: bool) -> None:
    """Print the flags a build needs to compile and link rewritten code.

    \b
    Examples:
      cc -O2 app.c $(locktune flags --cflags --libs) -o app
      PKG_CONFIG_PATH=$(locktune flags --pkg-config-path) pkg-config --cflags --libs locktune
    """
    if want_pc:
        click.echo(native.pkgconfig_dir())
        return
    if not want_cflags and not want_libs:
        want_cflags = want_libs = True
    out: list[str] = []
    if want_cflags:
        out += native.cflags()
    if want_libs:
        out += native.libs(static)
    click.echo(" ".join(out))
