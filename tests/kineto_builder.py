"""The tiny-trace builder moved into the package (kineto_sql/devtools/kineto_builder.py) so that `kineto-sql
test` builds a rule's cases without this directory; the tests keep importing it from here."""
from kineto_sql.devtools.kineto_builder import (EVENT_TYPES, HOST_PID, HOST_TID, CpuOp, Kernel,  # noqa: F401
                                                KinetoTrace, Launch, MemoryEvent, ProfilerStep, PythonFrame,
                                                from_case, to_case)
