-- version: 2
-- locked: 2 3525d950ce62f393
-- lib: lib.event_categories@4

INCLUDE PERFETTO MODULE kineto.lib.event_categories;

-- The python frames above an op, innermost first. Two sources, whichever the trace has: the op's
-- `python_function` ancestor slices (torch >= 1.13 with with_stack=True), or the op's `Call stack` arg
-- (older traces: one string, frames separated by ';', innermost first).
CREATE OR REPLACE PERFETTO FUNCTION kineto_python_frames(
  -- Slice id of the op (or any slice) whose python ancestry is wanted.
  op_id LONG
)
RETURNS TABLE(
  -- 1 for the innermost frame (the line that called the op), 2 for its caller, ...
  distance LONG,
  -- Slice id of the python_function frame; NULL when the frame comes from the Call stack arg.
  frame_id LONG,
  -- Frame text, e.g. `model.py(42): forward`.
  frame STRING,
  -- Where the frame came from: `python_function` or `call_stack`.
  source STRING
) AS
WITH RECURSIVE
  slice_frames AS (
    SELECT
      a.id AS frame_id,
      a.name AS frame,
      a.depth
    FROM ancestor_slice($op_id) AS a
    WHERE
      a.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
  ),
  stack_text AS (
    SELECT extract_arg(s.arg_set_id, 'args.Call stack') AS txt
    FROM slice AS s
    WHERE
      s.id = $op_id
  ),
  stack_split(distance, frame, rest) AS (
    SELECT
      1,
      CASE WHEN instr(txt, ';') > 0 THEN substr(txt, 1, instr(txt, ';') - 1) ELSE txt END,
      CASE WHEN instr(txt, ';') > 0 THEN substr(txt, instr(txt, ';') + 1) ELSE NULL END
    FROM stack_text
    WHERE
      txt IS NOT NULL
      AND txt != ''
    UNION ALL
    SELECT
      distance + 1,
      CASE WHEN instr(rest, ';') > 0 THEN substr(rest, 1, instr(rest, ';') - 1) ELSE rest END,
      CASE WHEN instr(rest, ';') > 0 THEN substr(rest, instr(rest, ';') + 1) ELSE NULL END
    FROM stack_split
    WHERE
      rest IS NOT NULL
      AND rest != ''
  )
SELECT
  row_number() OVER (ORDER BY depth DESC) AS distance,
  frame_id,
  frame,
  'python_function' AS source
FROM slice_frames
UNION ALL
SELECT
  distance,
  NULL AS frame_id,
  frame,
  'call_stack' AS source
FROM stack_split
WHERE
  NOT EXISTS (SELECT 1 FROM slice_frames)
ORDER BY distance;
