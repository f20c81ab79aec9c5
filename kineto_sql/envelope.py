"""The one JSON envelope of every machine answer: each CLI command's `--format json` and each MCP tool.

    {"schema_version": 1, "command": "run", "result": ...}
    {"schema_version": 1, "command": "run", "error": {"kind": "bad_input", "message": "one sentence"}}

A command that answers and still exits non-zero (a rank file that did not load, a `--fail-on` gate) keeps
its result and adds `"exit": {"code": 1, "reason": "one sentence"}`. `schema_version` is the envelope's;
a result may carry its own (diagnose's report has one, kineto_sql/diagnose/schema.json).
"""
from __future__ import annotations

import orjson

SCHEMA_VERSION = 1

# What went wrong, for a program to branch on (the message is for people).
ERROR_KINDS = {
    "bad_input": "the trace, a rule id, a parameter or a path cannot be used (exit 2)",
    "usage": "the command line itself: an unknown option, a missing argument (exit 2)",
    "data_loss": "loading would lose events; --allow-loss accepts it (exit 2)",
    "out_of_memory": "the load did not fit in memory (exit 2)",
    "no_space": "the output could not be written: the disk is full (exit 2)",
    "interrupted": "Ctrl-C (exit 130)",
}


def ok(command: str, result, exit_code: int = 0, reason: str | None = None) -> dict:
    body = {"schema_version": SCHEMA_VERSION, "command": command, "result": result}
    if exit_code:
        body["exit"] = {"code": exit_code, "reason": reason}
    return body


def error(command: str, message: str, kind: str) -> dict:
    return {"schema_version": SCHEMA_VERSION, "command": command, "error": {"kind": kind, "message": message}}


def dumps(body: dict, indent: bool = True) -> str:
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(body, option=option, default=str).decode()
