"""Errors the command line turns into one line on stderr and an exit status.

Exit status contract (DESIGN.md): 0 success, 1 the work failed, 2 bad usage.
"""


class LocktuneError(Exception):
    """The work failed (a file did not parse, the program under study crashed): exit 1.

    The message must say what and where in one line, e.g. ``src/a.c:12: expected ';'``.
    """

    exit_code = 1


class UsageProblem(LocktuneError):
    """The command was used wrongly in a way click cannot see (conflicting options...): exit 2."""

    exit_code = 2


class NotImplementedYet(UsageProblem):
    """A subcommand of the contract whose work has not landed yet: exit 2, never pretend."""

    def __init__(self, what: str, issue: int):
        super().__init__(f"{what} is not implemented yet (tracked in issue #{issue})")
