"""The exceptions kineto-sql raises. Each carries one sentence a person can act on."""


class KinetoSqlError(Exception):
    """Base class: the CLI prints the message and exits 2, never a traceback."""


class TraceInputError(KinetoSqlError):
    """The input is missing, unreadable, or not a Kineto / Chrome trace."""


class DataLossError(KinetoSqlError):
    """Loading would lose events (dropped by the loader or by the engine) and the caller did not allow it."""


class EngineError(KinetoSqlError):
    """The trace processor itself failed (aborted, out of memory, refused the trace)."""


class QueryError(KinetoSqlError):
    """A SQL statement failed; the session stays usable."""
