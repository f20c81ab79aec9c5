"""Writing a result file so that it is either whole or absent: never a truncated report.

The text goes to a temporary file beside the target, is flushed to disk, and replaces the target in one
rename (os.replace is atomic on POSIX within a file system). A full disk or any other write error removes
the temporary file and becomes one sentence; the target keeps what it held before.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from kineto_sql.errors import KinetoSqlError
from kineto_sql.inputs import shown


def write_error(target, exc: OSError, atomic: bool = True) -> KinetoSqlError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "no space left on the device (or the disk quota is used up); free space or write elsewhere"
    elif exc.errno == errno.EFBIG:
        why = "the file would exceed the size limit (ulimit -f); raise it or write elsewhere"
    else:
        why = f"{exc.strerror or exc}; check the folder exists and is writable"
    return KinetoSqlError(f"cannot write {shown(target)}: {why}" + (" (nothing was written there)" if atomic else ""))


def write_atomically(target, data: bytes | str) -> None:
    """`target` whole or as it was. A link is written through (the file it names gets the new text, the link
    stays); a target that is no regular file (/dev/null, /dev/stdout, a FIFO) is written to as it is: renaming
    a file over it would put a plain file in its place (as root, /dev/null itself)."""
    target = Path(target)
    payload = data.encode() if isinstance(data, str) else data
    if target.is_symlink():
        target = target.resolve()
    if target.exists() and not target.is_file():
        try:
            with open(target, "wb") as f:
                f.write(payload)
        except OSError as exc:
            raise write_error(target, exc, atomic=False) from None
        return
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise write_error(target, exc) from None
