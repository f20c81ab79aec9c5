"""The SQL text layer (bottom): reading, splitting and masking PerfettoSQL, Python values as SQL literals
(the one place), the `kineto` package's files and INCLUDE resolution, and the internal .sql files."""
