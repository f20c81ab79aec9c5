"""The `kineto-sql` console script: starts preparing the trace a command names before the command's own
imports (pandas, the engine: about a second) have finished, then runs the click group.

Only for the commands that open one trace file as their first argument, and only when they would load it
in two processes anyway (not with `--jobs 1`, nor on a one-core machine): the command's `open_trace`
takes the preparation already under way (kineto_sql.loading.background.take). One that nobody takes (the
command failed before loading, or opened another file) is ended at exit.
"""
from __future__ import annotations

import atexit
import errno
import logging
import os
import sys
from pathlib import Path

EARLY_COMMANDS = ("diagnose", "info", "sql")


def early_trace(args: list[str]) -> Path | None:
    """The trace file `args` would open: the first argument after one of EARLY_COMMANDS, when it is an
    existing regular file and nothing asks for a single process."""
    if not args or args[0] not in EARLY_COMMANDS or (os.cpu_count() or 1) < 2 or not hasattr(os, "fork"):
        return None
    rest = args[1:]
    if any(a in ("-h", "--help", "--jobs=1", "-j1") for a in rest) or any(
            a in ("--jobs", "-j") and b == "1" for a, b in zip(rest, rest[1:])):
        return None
    if not rest or rest[0].startswith("-"):
        return None
    path = Path(rest[0])
    return path if path.is_file() else None


def main() -> None:
    path = early_trace(sys.argv[1:])
    if path is not None:
        from kineto_sql.loading import background

        atexit.register(background.cancel_early)
        background.start_early(path)
    from kineto_sql.cli import interrupt
    from kineto_sql.cli.main import cli

    interrupt.install()
    try:
        cli()
    except SystemExit as stop:
        exit_now(stop.code)
    exit_now(0)


def exit_now(code) -> None:
    """Ends the process as sys.exit(code) would, without the interpreter's teardown.

    Freeing the embedded engine and every module at exit takes 0.3 s after a diagnose (measured with
    strace between the report's write and exit_group), 5% of the command on a 35 MB trace, and frees
    nothing the system does not reclaim anyway. What teardown would do that matters is done first: the
    atexit handlers (the loader child's end, multiprocessing's and dask's cleanups), the log handlers, the
    standard streams."""
    atexit._run_exitfuncs()
    logging.shutdown()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError as exc:
            if stream is sys.stdout and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                # the last of the output did not fit: say so rather than end with 0 and a short file
                os.write(2, b"error: cannot write the output: no space left on the device; free space or "
                            b"write elsewhere\n")
                code = code or 2
        except ValueError:  # a closed stream: nothing left to say
            pass
    os._exit(code or 0)


if __name__ == "__main__":
    main()
