-- id: catalog.device_composition
-- version: 1
-- kind: detector
-- title: Device composition: what the busy device computes (GEMM, attention, memory-bound kernels, other), and what to try
-- references: torch.profiler & HTA: the Framework View, "Reading order" steps 1-2 ("GPU dense": the kernels
--   are the step; where does GPU time go by op)
-- what: the device is busy for much of the steady step (reading.verdict device-bound: compute >= 80%),
--   or busy buckets of the step-time ledger that no specific kernel rule explains: the step's time is the
--   kernels' own, split by what they compute.
-- confirming: the ledger's busy buckets as shares of the steady step (GEMM / convolution, fused attention
--   and softmax, elementwise / norm / reduction, other compute, copies, communication under compute), the
--   largest fine kernel class by device time, the share of kernel time launched by graph launches
--   (CUDA graphs, whose kernels carry no ATen op), hta.kernel_breakdown for the kernels by name.
-- why: on a busy device the kernels are the step: every share of busy time is step time, and the class
--   that holds most of it is where a faster kernel, a lower precision or fusion buys time back. impact_dur
--   is the device's busy time in the steady windows; diagnose gives it only the busy time no specific
--   kernel rule (catalog.kernel_mix, catalog.implicit_dtype_casts, ...) claimed first, so it is the
--   default explainer of the busy buckets. Accelerators whose device events are not CUDA-style kernels
--   (MTIA execution events) and graph-launched kernels are read the same way: by time and class.
-- known_problems: not a fault by itself: below device-bound (reading.verdict's compute share under 80%)
--   the finding is informational (max_severity info), the idle buckets' findings say where the step is
--   lost, and it never outranks them.
-- example: gemm_dominated_device_bound
-- use_instead: by the class that holds most of the busy time: GEMM / convolution: lower precision (torch.autocast
--   to bf16 / fp16, TF32 with torch.set_float32_matmul_precision("high")), shapes that are multiples of
--   8 / 16 for tensor cores, larger batched GEMMs; attention: fused scaled_dot_product_attention;
--   memory-bound elementwise / norm / reduction kernels: fusion (torch.compile), fused optimizers and
--   norms; other: the top kernels by name (hta.kernel_breakdown) and the accelerator's own tools.
-- needs: gpu
-- claims: rest of busy.*
-- status: preview
-- default min_busy_pct: 5
-- default device_bound_pct: 80

INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.steady_sample;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- One row per device whose steady busy time is at least min_busy_pct of its steady lane time.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_device_composition(
  -- The device's busy share of the steady windows that fires, % (5: the share at which diagnose expects
  -- every ledger bucket to be explained by a finding).
  min_busy_pct DOUBLE,
  -- Compute share (busy except exposed collectives, over every steady lane) at which the step is
  -- device-bound, % (reading.verdict's rule: 80). Below it the finding is informational.
  device_bound_pct DOUBLE
)
RETURNS TABLE(
  -- First steady window start.
  ts TIMESTAMP,
  -- From the first steady window start to the last one's end.
  dur DURATION,
  -- Step time claimed: the device's busy time in the steady windows (diagnose keeps what no specific
  -- kernel rule claimed).
  impact_dur DURATION,
  -- NULL: the row covers every steady window.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Device index.
  device LONG,
  -- Busy share of the device's steady time, %.
  busy_pct DOUBLE,
  -- Compute share over every steady lane (reading.verdict's compute_pct), %.
  compute_pct DOUBLE,
  -- busy.gemm share (GEMM and convolution), %.
  gemm_pct DOUBLE,
  -- busy.attention share (fused attention, softmax), %.
  attention_pct DOUBLE,
  -- busy.elementwise share (elementwise, norm, reduction, copy kernels), %.
  elementwise_pct DOUBLE,
  -- busy.compute_other share (embedding and any other compute, another accelerator's execution events), %.
  other_pct DOUBLE,
  -- Copies and memsets alone, %.
  copy_pct DOUBLE,
  -- Communication kernels (overlapped or exposed), %.
  comm_pct DOUBLE,
  -- The fine kernel class (kineto.lib.kernel_classes) with the most device time in the steady span.
  top_class STRING,
  -- Its share of the device time, %.
  top_class_pct DOUBLE,
  -- Share of the device time launched by graph launches (one launch, several kernels), %.
  graph_pct DOUBLE,
  -- The fix for the class that holds most of the busy time.
  fix STRING,
  -- info below device-bound; NULL (no cap) when device-bound.
  max_severity STRING
) AS
WITH
  sample AS (
    SELECT coalesce((SELECT representative FROM kineto_steady_sample), TRUE) AS representative
  ),
  -- the verdict's compute share: every analysed lane (cold too when the steady sample is too small)
  whole AS (
    SELECT
      100.0 * sum(CASE WHEN kind = 'busy' AND bucket != 'busy.comm_exposed' THEN dur ELSE 0 END)
        / max(sum(dur), 1) AS compute_pct
    FROM kineto_ledger
    WHERE
      device IS NOT NULL
      AND (NOT is_cold OR NOT (SELECT representative FROM sample))
  ),
  -- the claim: steady windows only (the pools diagnose claims from)
  lanes AS (
    SELECT
      device,
      min(window_ts) AS ts,
      max(window_ts + window_dur) AS end_ts,
      sum(dur) AS lane_dur,
      sum(CASE WHEN kind = 'busy' THEN dur ELSE 0 END) AS busy_dur,
      sum(CASE WHEN bucket = 'busy.gemm' THEN dur ELSE 0 END) AS gemm_dur,
      sum(CASE WHEN bucket = 'busy.attention' THEN dur ELSE 0 END) AS attention_dur,
      sum(CASE WHEN bucket = 'busy.elementwise' THEN dur ELSE 0 END) AS elementwise_dur,
      sum(CASE WHEN bucket = 'busy.compute_other' THEN dur ELSE 0 END) AS other_dur,
      sum(CASE WHEN bucket GLOB 'busy.copy_*' OR bucket = 'busy.memset' THEN dur ELSE 0 END) AS copy_dur,
      sum(CASE WHEN bucket GLOB 'busy.comm_*' THEN dur ELSE 0 END) AS comm_dur
    FROM kineto_ledger
    WHERE
      NOT is_cold
      AND device IS NOT NULL
    GROUP BY device
  ),
  -- device activities that start in the steady span of their device, with their fine class and whether a
  -- graph launch started them (one sorted range per device, no join per window)
  activity AS (
    SELECT
      c.device,
      c.class,
      c.dur,
      coalesce(gl.gpu_count > 1, FALSE) AS by_graph
    FROM kineto_kernel_classes AS c
    JOIN lanes AS l
      ON l.device = c.device
      AND c.ts >= l.ts
      AND c.ts < l.end_ts
    JOIN kineto_kernels AS k
      ON k.id = c.id
    LEFT JOIN kineto_launches AS gl
      ON gl.correlation = k.correlation
      AND gl.gpu_count > 1
  ),
  classes AS (
    SELECT
      device,
      class,
      sum(dur) AS class_dur,
      row_number() OVER (PARTITION BY device ORDER BY sum(dur) DESC, class) AS rn
    FROM activity
    GROUP BY device, class
  ),
  totals AS (
    SELECT device, sum(dur) AS total_dur, sum(CASE WHEN by_graph THEN dur ELSE 0 END) AS graph_dur
    FROM activity
    GROUP BY device
  ),
  judged AS (
    SELECT
      l.*,
      100.0 * l.busy_dur / max(l.lane_dur, 1) AS busy_pct,
      100.0 * l.gemm_dur / max(l.lane_dur, 1) AS gemm_pct,
      100.0 * l.attention_dur / max(l.lane_dur, 1) AS attention_pct,
      100.0 * l.elementwise_dur / max(l.lane_dur, 1) AS elementwise_pct,
      100.0 * l.other_dur / max(l.lane_dur, 1) AS other_pct,
      100.0 * l.copy_dur / max(l.lane_dur, 1) AS copy_pct,
      100.0 * l.comm_dur / max(l.lane_dur, 1) AS comm_pct,
      c.class AS top_class,
      100.0 * c.class_dur / max(t.total_dur, 1) AS top_class_pct,
      100.0 * coalesce(t.graph_dur, 0) / max(t.total_dur, 1) AS graph_pct,
      (SELECT compute_pct FROM whole) AS compute_pct,
      -- the class of busy time that leads: the fix follows it
      CASE
        WHEN l.gemm_dur >= max(l.attention_dur, l.elementwise_dur, l.other_dur, l.copy_dur, l.comm_dur) THEN 'gemm'
        WHEN l.attention_dur >= max(l.elementwise_dur, l.other_dur, l.copy_dur, l.comm_dur) THEN 'attention'
        WHEN l.elementwise_dur >= max(l.other_dur, l.copy_dur, l.comm_dur) THEN 'elementwise'
        WHEN l.other_dur >= max(l.copy_dur, l.comm_dur) THEN 'other'
        WHEN l.copy_dur >= l.comm_dur THEN 'copy'
        ELSE 'comm'
      END AS lead
    FROM lanes AS l
    LEFT JOIN classes AS c
      ON c.device = l.device
      AND c.rn = 1
    LEFT JOIN totals AS t
      ON t.device = l.device
  )
SELECT
  j.ts,
  j.end_ts - j.ts AS dur,
  j.busy_dur AS impact_dur,
  NULL AS step,
  printf(
    'Device %d is busy %.1f%% of the steady windows (compute %.1f%% over every device, %s): GEMM / convolution %.1f%%, attention %.1f%%, elementwise / norm / reduction %.1f%%, other compute %.1f%%, copies %.1f%%, communication %.1f%%; the largest kernel class is %s (%.1f%% of device time)%s.',
    j.device,
    j.busy_pct,
    j.compute_pct,
    CASE WHEN j.compute_pct >= $device_bound_pct THEN 'device-bound: the kernels are the step' ELSE 'not device-bound' END,
    j.gemm_pct,
    j.attention_pct,
    j.elementwise_pct,
    j.other_pct,
    j.copy_pct,
    j.comm_pct,
    coalesce(j.top_class, 'none'),
    coalesce(j.top_class_pct, 0),
    CASE WHEN j.graph_pct >= 1 THEN printf('; %.1f%% of device time is launched by graph launches (no ATen op per kernel)', j.graph_pct) ELSE '' END
  ) AS evidence,
  j.device,
  round(j.busy_pct, 2) AS busy_pct,
  round(j.compute_pct, 2) AS compute_pct,
  round(j.gemm_pct, 2) AS gemm_pct,
  round(j.attention_pct, 2) AS attention_pct,
  round(j.elementwise_pct, 2) AS elementwise_pct,
  round(j.other_pct, 2) AS other_pct,
  round(j.copy_pct, 2) AS copy_pct,
  round(j.comm_pct, 2) AS comm_pct,
  j.top_class,
  round(j.top_class_pct, 2) AS top_class_pct,
  round(j.graph_pct, 2) AS graph_pct,
  CASE j.lead
    WHEN 'gemm' THEN 'GEMM / convolution kernels hold most of the busy time: run them in lower precision (torch.autocast to bf16 / fp16, or TF32 with torch.set_float32_matmul_precision("high")), keep their dimensions multiples of 8 / 16 so tensor cores run them, batch small GEMMs into larger ones; catalog.op_far_from_peak and reading.op_roofline say which run far from the device''s peak.'
    WHEN 'attention' THEN 'Attention and softmax kernels hold most of the busy time: use fused scaled_dot_product_attention (flash / memory-efficient backends) instead of matmul + softmax + matmul, in bf16 / fp16.'
    WHEN 'elementwise' THEN 'Memory-bound elementwise, norm and reduction kernels hold most of the busy time: fuse them (torch.compile), use fused optimizers (fused=True / foreach) and fused norms, and avoid needless copies and dtype conversions.'
    WHEN 'other' THEN 'Kernels outside the GEMM / attention / elementwise classes (embedding, custom kernels, or another accelerator''s execution events) hold most of the busy time: read the top kernels by name (hta.kernel_breakdown) and the accelerator''s own profiling tools for what each one computes.'
    WHEN 'copy' THEN 'Device copies and memsets hold most of the busy time: keep tensors on the device, copy less and in larger pieces, and overlap host-device copies with compute (pinned memory, non_blocking=True).'
    ELSE 'Collective kernels hold most of the busy time: overlap them with compute (DDP bucket sizes, FSDP prefetch) and check the link bandwidth (kineto-sql collectives).'
  END AS fix,
  CASE WHEN j.compute_pct >= $device_bound_pct THEN NULL ELSE 'info' END AS max_severity
FROM judged AS j
WHERE
  j.busy_pct >= $min_busy_pct
ORDER BY j.device;
