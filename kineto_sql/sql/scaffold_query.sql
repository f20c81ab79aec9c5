-- id: __QUERY_ID__
-- version: 1
-- kind: __KIND__
-- title: TODO one line saying what the table shows
-- references: TODO public sources only: a documentation URL, the seed text's section title, an HTA analysis
-- needs: cpu_ops
-- status: preview
-- default min_dur: 1ms

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- TODO say what one row is. An empty result means "nothing to show".
CREATE OR REPLACE PERFETTO FUNCTION __ENTRYPOINT__(
  -- TODO ops at least this long (ns; give the default as 1ms, 500us ...) are listed.
  min_dur DURATION
)
RETURNS TABLE(
  -- Op start.
  ts TIMESTAMP,
  -- Op duration.
  dur DURATION,
  -- Step number of the ProfilerStep#N it is in, or NULL.
  step LONG,
  -- Op name.
  name STRING
) AS
SELECT o.ts, o.dur, o.step, o.name
FROM kineto_cpu_ops AS o
WHERE
  o.dur >= $min_dur
  AND NOT o.is_annotation
ORDER BY o.ts;
