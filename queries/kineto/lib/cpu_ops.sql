-- version: 5
-- locked: 5 df4020fc39f7ac62
-- lib: lib.event_categories@4 lib.host_slices@8 lib.host_tree@3 lib.steps@9 lib.thread_slices@2
--   lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;

-- Host-side operators: ATen ops (`cpu_op`, 2021 `Operator`) and record_function / user annotations
-- (`user_annotation`, including ProfilerStep#N and Optimizer.step#...). Python frames are not ops (see
-- kineto.lib.python_frames) but count as children for self time, as in torch's key_averages; parent and
-- self time come from kineto.lib.host_tree (torch's per-thread tree, overlap lanes folded back).
CREATE OR REPLACE PERFETTO TABLE kineto_cpu_ops(
  -- Slice id of the op.
  id JOINID(slice.id),
  -- Op start.
  ts TIMESTAMP,
  -- Op duration (CPU total).
  dur DURATION,
  -- Self time: dur minus the durations of its direct children on the same thread (ops, annotations,
  -- python frames, runtime calls), as torch's key_averages computes it.
  self_dur DURATION,
  -- Op name, e.g. aten::mm.
  name STRING,
  -- Raw category: cpu_op, Operator, user_annotation, ...
  category STRING,
  -- True for record_function / user annotations (category user_annotation, or a ProfilerStep#N).
  is_annotation BOOL,
  -- Depth of the slice on its track (python frames count; an overlap lane starts at 0).
  depth LONG,
  -- Direct parent in torch's tree (an op, annotation or python frame), or NULL.
  parent_id LONG,
  -- Thread of the op.
  utid JOINID(thread.id),
  -- Process of the op.
  upid JOINID(process.id),
  -- Step number N of the CPU ProfilerStep#N window (same process) the op starts in, or NULL.
  step LONG,
  -- Kineto's `External id` arg: links the op to its runtime calls and kernels.
  external_id LONG,
  -- Arg set of the slice (Input Dims, Input type, Call stack...), for extract_arg.
  arg_set_id ARGSETID
) AS
SELECT
  h.id,
  h.ts,
  h.dur,
  t.self_dur,
  h.name,
  h.category,
  _kineto_is_host_annotation!(h.category, h.name) AS is_annotation,
  h.depth,
  t.parent_id,
  h.utid,
  h.upid,
  h.step,
  extract_arg(s.arg_set_id, 'args.External id') AS external_id,
  s.arg_set_id
-- the shared host-slice table drives (in id order), tree and slice are lookups by id
FROM kineto_host_slices AS h
CROSS JOIN kineto_host_tree AS t
  ON t.id = h.id
CROSS JOIN slice AS s
  ON s.id = h.id
WHERE
  h.event_class = 'cpu_op'
ORDER BY h.ts;

-- Queries join ops by id (parent, launching op): index it (the table is in time order).
CREATE OR REPLACE PERFETTO INDEX _kineto_cpu_ops_id ON kineto_cpu_ops(id);

-- And children by their parent.
CREATE OR REPLACE PERFETTO INDEX _kineto_cpu_ops_parent_id ON kineto_cpu_ops(parent_id);
