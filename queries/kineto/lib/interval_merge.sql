-- version: 3

-- Interval merge, written once: overlapping or touching (ts, dur) intervals of one partition become
-- maximal intervals. Sorted passes (running max of earlier ends, then the rows that start after it), so
-- the cost is a sort, never a join per row. Perfetto v52's stdlib has interval
-- intersection (intervals.intersect) and overlap counting (intervals.overlap) but no partitioned merge.

-- One column name of a partition list, as itself (expanded over the list by __intrinsic_token_apply, as
-- the stdlib's intervals.intersect does).
CREATE OR REPLACE PERFETTO MACRO _kineto_interval_merge_col(
  -- A column name.
  x ColumnName
)
RETURNS Expr AS $x;

-- Each row of `tab` (all its columns) with `merge_group`, the number of the merged interval it falls in
-- within its partition (1, 2, ... in time order), for callers that aggregate more than the interval
-- (e.g. the first step of the merged kernels): GROUP BY the partition columns and merge_group. Also adds
-- `_merge_end_ts` (ts + dur) and `_merge_prev_end_ts` (latest end of the earlier rows of the partition).
CREATE OR REPLACE PERFETTO MACRO _kineto_interval_merge_rows(
  -- Table or subquery with columns `ts`, `dur` and the partition columns.
  tab TableOrSubquery,
  -- Partition columns: intervals of different values never merge.
  parts ColumnNameList
)
RETURNS TableOrSubquery AS
(
  SELECT
    *,
    sum(CASE WHEN _merge_prev_end_ts IS NULL OR ts > _merge_prev_end_ts THEN 1 ELSE 0 END) OVER (
      PARTITION BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
      ORDER BY ts, _merge_end_ts
      ROWS UNBOUNDED PRECEDING
    ) AS merge_group
  FROM (
    SELECT
      *,
      ts + dur AS _merge_end_ts,
      max(ts + dur) OVER (
        PARTITION BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
        ORDER BY ts, ts + dur
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
      ) AS _merge_prev_end_ts
    FROM $tab
  )
);

-- Merged intervals of `tab`, per value of its partition columns `parts`, a parenthesised list:
-- `(device, stream)`, `(upid)`; for one partition give a constant column (`(SELECT 0 AS k, ts, dur ...)`,
-- `(k)`). `tab` must have columns `ts` and `dur` (dur >= 0). An interval that starts exactly where the
-- merged interval so far ends joins it. Output columns: the partition columns, ts, dur, interval_count,
-- in (partition columns, ts) order.
-- Two window passes, one aggregate each, and no GROUP BY: the first marks the rows that start a merged
-- interval (they start after the latest end of the rows before them) and numbers the rows; the second
-- runs over those starts only, each taking its end (the latest end before the next start) and its count
-- (the next start's row number less its own) from the next. A sentinel row per partition, after every
-- real row, is the next start of the last interval. `tab` is read twice (rows, sentinels): pass a table
-- or a cheap subquery; SQLite materializes a CTE named twice.
CREATE OR REPLACE PERFETTO MACRO kineto_interval_merge(
  -- Table or subquery with columns `ts`, `dur` and the partition columns.
  tab TableOrSubquery,
  -- Partition columns: intervals of different values never merge.
  parts ColumnNameList
)
RETURNS TableOrSubquery AS
(
  SELECT
    __intrinsic_token_apply!(_kineto_interval_merge_col, $parts),
    ts,
    _merge_next_prev_end_ts - ts AS dur,
    _merge_next_row - _merge_row AS interval_count
  FROM (
    SELECT
      __intrinsic_token_apply!(_kineto_interval_merge_col, $parts),
      ts,
      _merge_row,
      lead(_merge_prev_end_ts) OVER _merge_starts AS _merge_next_prev_end_ts,
      lead(_merge_row) OVER _merge_starts AS _merge_next_row
    FROM (
      SELECT
        __intrinsic_token_apply!(_kineto_interval_merge_col, $parts),
        ts,
        -- latest end of the earlier rows of the partition, and how many there are
        max(ts + dur) OVER _merge_rows AS _merge_prev_end_ts,
        count(*) OVER _merge_rows AS _merge_row
      FROM (
        SELECT __intrinsic_token_apply!(_kineto_interval_merge_col, $parts), ts, dur
        FROM $tab
        UNION ALL
        -- the sentinel: starts after every end of its partition, so it sorts last and starts an interval
        SELECT __intrinsic_token_apply!(_kineto_interval_merge_col, $parts), max(ts + dur) + 1 AS ts, 0 AS dur
        FROM $tab
        GROUP BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
      )
      WINDOW _merge_rows AS (
        PARTITION BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
        ORDER BY ts, ts + dur
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
      )
    )
    WHERE
      _merge_prev_end_ts IS NULL
      OR ts > _merge_prev_end_ts
    WINDOW _merge_starts AS (
      PARTITION BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
      ORDER BY _merge_row
    )
  )
  -- the sentinels have no next start
  WHERE
    _merge_next_row IS NOT NULL
);
