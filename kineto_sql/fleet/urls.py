"""Listing the rank files under an fsspec URL (s3://bucket/job/), with one sentence for each way it fails:
the protocol's package is not installed (which one to install), the protocol is unknown, the archive or
folder is missing, the listing is refused."""
from __future__ import annotations

import re

from kineto_sql.errors import KinetoSqlError, TraceInputError

# fsspec's own implementations whose extra packages are not named by their class's module
_NEEDS = {"http": "aiohttp and requests", "https": "aiohttp and requests", "sftp": "paramiko", "github": "requests",
          "hdfs": "pyarrow (and a Java runtime with Hadoop's libraries)"}


def protocol(url: str) -> str:
    """The outer protocol of a URL (`zip://*::s3://b/x.zip` -> zip)."""
    return str(url).split("://", 1)[0].lower()


def package_for(proto: str) -> str:
    from fsspec.registry import known_implementations

    if proto in _NEEDS:
        return _NEEDS[proto]
    spec = known_implementations.get(proto, {})
    top = str(spec.get("class", "")).split(".", 1)[0]
    if top and top != "fsspec":
        return top
    quoted = re.findall(r'"([A-Za-z0-9_.-]+)"', spec.get("err", ""))
    return " ".join(quoted) or f"the fsspec implementation of {proto}://"


def list_url(target: str, suffixes: tuple[str, ...]):
    """(filesystem, sorted trace paths) under `target`; KinetoSqlError with one sentence otherwise."""
    try:
        import fsspec
    except ImportError:
        raise KinetoSqlError(f"{target} is a URL: reading it needs fsspec (pip install 'kineto-sql[fleet]')") \
            from None
    proto = protocol(target)
    try:
        fs, root = fsspec.core.url_to_fs(str(target))
        names = sorted(str(p) for p in fs.ls(root, detail=False) if str(p).endswith(suffixes))
    except ImportError:
        pkg = package_for(proto)
        pip = pkg.split(" (")[0].replace(" and ", " ")
        raise KinetoSqlError(f"{target}: reading {proto}:// URLs needs {pkg}, which is not installed "
                             f"(pip install {pip})") from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise KinetoSqlError(f"{target}: {proto}:// is not a protocol fsspec knows; give a local directory or "
                                 "a URL such as s3://bucket/job/, gs://bucket/job/ or https://host/job/") from None
        raise TraceInputError(f"{target}: cannot list it ({exc}); check the URL") from None
    except FileNotFoundError as exc:
        missing = exc.filename or exc
        raise TraceInputError(f"{target}: {missing} does not exist; check the URL") from None
    except Exception as exc:  # noqa: BLE001 - credentials, network, HTTP errors: each filesystem its own class
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceInputError(f"{target}: cannot list it ({text}); check the URL, the network and the "
                              "credentials") from None
    if not names:
        raise TraceInputError(f"{target} holds no trace files (*.json or *.json.gz)")
    return fs, names
