-- id: __QUERY_ID__
-- version: 1
-- kind: detector
-- title: TODO one line naming the bad pattern (not the fix)
-- source: TODO seed and section, e.g. seed 000 section 3, major faults row N
-- signature: TODO what the fault looks like in the trace
-- confirming: TODO the number a person checks to confirm a finding
-- fix: TODO the fix direction
-- needs: cpu_ops
-- param min_dur LONG 1000000: TODO an op at least this long (ns) is a finding

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- TODO say what one row is: one finding per ... . Silent (no rows) when the fault is absent.
CREATE OR REPLACE PERFETTO FUNCTION __ENTRYPOINT__(
  -- TODO describe the threshold.
  min_dur LONG
)
RETURNS TABLE(
  -- When the finding starts.
  ts TIMESTAMP,
  -- How long it lasts.
  dur DURATION,
  -- Estimated step time lost to it.
  impact_dur DURATION,
  -- Step number of the ProfilerStep#N it is in, or NULL.
  step LONG,
  -- One plain-words sentence with the numbers.
  evidence STRING,
  -- Slice id of the op.
  op_id LONG
) AS
SELECT
  o.ts,
  o.dur,
  o.self_dur AS impact_dur,
  o.step,
  printf('%s ran %.1f us', o.name, o.dur / 1e3) AS evidence,
  o.id AS op_id
FROM kineto_cpu_ops AS o
WHERE
  o.dur >= $min_dur
  AND NOT o.is_annotation
ORDER BY o.ts;
