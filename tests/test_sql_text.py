"""kineto_sql.sql_text: the one scanner of SQL text (strings, quoted identifiers and comments found once)."""
from __future__ import annotations

from kineto_sql import sql_text
from kineto_sql.sql_literals import bind

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
