-- id: __QUERY_ID__
-- version: 1
-- kind: detector
-- title: TODO one line naming the bad pattern (not the fix)
-- references: TODO public sources only: a documentation URL, a paper, the seed text's section title
-- what: TODO what the fault looks like in the trace
-- confirming: TODO the number a person checks to confirm a finding
-- why: TODO why it costs step time, and how impact_dur estimates that time
-- known_problems: TODO where it fires although nothing is wrong, and how to tell
-- example: TODO the name of a case of __NAME__.test.toml that fires
-- use_instead: TODO the fix direction: what to write instead
-- needs: cpu_ops
-- status: preview
-- default min_dur: 1ms

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- TODO say what one row is: one finding per ... . Silent (no rows) when the fault is absent.
CREATE OR REPLACE PERFETTO FUNCTION __ENTRYPOINT__(
  -- TODO an op at least this long (ns; give the default as 1ms, 500us ...) is a finding.
  min_dur DURATION
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
