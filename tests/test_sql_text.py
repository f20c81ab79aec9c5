"""kineto_sql.sql.text: the one scanner of SQL text (strings, quoted identifiers and comments found once)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.sql import text as sql_text
from kineto_sql.sql.literals import bind

SQL = """-- header; with a semicolon
SELECT 'a;b' AS "x;y", `q;` -- c;
FROM t; /* block; */
SELECT 2 AS ':not_a_param', :value AS v;
"""


def test_mask_keeps_offsets_and_blanks_strings_and_comments():
    masked = sql_text.mask(SQL)
    assert len(masked) == len(SQL) and masked.count("\n") == SQL.count("\n")
    assert masked.count(";") == 2
    assert "'   '" in masked and "header" not in masked


def test_split_statements_ignores_semicolons_in_strings_and_comments():
    statements = sql_text.split_statements(SQL)
    assert [s.line for s in statements] == [2, 4]
    assert statements[0].doc == "-- header; with a semicolon"


def test_normalize_and_strip_comments():
    assert sql_text.strip_comments(SQL).splitlines()[0] == """SELECT 'a;b' AS "x;y", `q;`"""
    assert sql_text.normalize("SELECT  1 -- x\n ,  'a  b'") == "SELECT 1 , 'a  b'"


def test_bind_replaces_code_placeholders_only():
    assert bind(SQL, {"value": "it's"}).splitlines()[3] == "SELECT 2 AS ':not_a_param', 'it''s' AS v;"


def _read_by_hand(sql: str) -> list[tuple[str, str]]:
    """The reading sql_text.segments must give, one character at a time: a quote opens a string that a
    doubled quote does not close, `--` runs to the end of its line, `/*` to `*/`, anything unterminated
    to the end of the text."""
    out, i, n, code = [], 0, len(sql), 0
    while i < n:
        c = sql[i]
        if c in "'\"`" or sql.startswith("--", i) or sql.startswith("/*", i):
            if code < i:
                out.append(("code", sql[code:i]))
            if c in "'\"`":
                j = i + 1
                while j < n and not (sql[j] == c and not sql.startswith(c * 2, j)):
                    j += 2 if sql.startswith(c * 2, j) else 1
                end, kind = min(j + 1, n), "string"
            elif c == "-":
                j = sql.find("\n", i)
                end, kind = (n if j < 0 else j), "comment"
            else:
                j = sql.find("*/", i + 2)
                end, kind = (n if j < 0 else j + 2), "comment"
            out.append((kind, sql[i:end]))
            i = code = end
        else:
            i += 1
    if code < n:
        out.append(("code", sql[code:]))
    return out


@given(st.text(alphabet="ab'\"`-/*\n ;", max_size=40))
@settings(max_examples=1000, deadline=None)
def test_the_scanner_reads_as_a_character_by_character_reading(sql):
    assert list(sql_text.segments(sql)) == _read_by_hand(sql)
    blanked = "".join(t if k == "code" else
                      (t[0] + "".join(c if c == "\n" else " " for c in t[1:-1]) + t[-1] if len(t) >= 2 else t)
                      if k == "string" else "".join(c if c == "\n" else " " for c in t)
                      for k, t in _read_by_hand(sql))
    assert sql_text.mask(sql) == blanked
