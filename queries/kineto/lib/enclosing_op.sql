-- version: 1
-- locked: 1 32c152b9235610c8
-- lib: lib.event_categories@4

INCLUDE PERFETTO MODULE kineto.lib.event_categories;

-- The op a slice runs inside, as the rules name it: an ancestor on the slice's own track of the cpu_op
-- class (ATen ops, and record_function annotations when `with_annotations`), never a ProfilerStep#N window
-- (it encloses everything of its step and names nothing). `innermost` TRUE takes the deepest such
-- ancestor (the op that made the call), FALSE the outermost (the op the model code called). The slice
-- itself is not its own ancestor. NULL when no ancestor qualifies. One ancestor walk per slice: use it on
-- the few rows a rule reports, not on every slice of a trace.
CREATE OR REPLACE PERFETTO MACRO kineto_enclosing_op(
  -- Slice id.
  slice_id Expr,
  -- TRUE: the innermost qualifying ancestor; FALSE: the outermost.
  innermost Expr,
  -- TRUE: record_function annotations qualify too.
  with_annotations Expr
)
RETURNS Expr AS
(
  SELECT a.id
  FROM ancestor_slice($slice_id) AS a
  JOIN kineto_event_categories AS ec
    ON ec.category = a.category
  WHERE
    ec.event_class = 'cpu_op'
    AND ($with_annotations OR NOT ec.is_annotation)
    AND NOT a.name GLOB 'ProfilerStep#*'
  ORDER BY CASE WHEN $innermost THEN -a.depth ELSE a.depth END
  LIMIT 1
);
