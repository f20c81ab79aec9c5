-- id: catalog.kernel_mix
-- version: 6
-- kind: detector
-- title: Kernel mix of a busy GPU: unfused attention, unfused elementwise / norm work, device-to-device copy storms
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA kernel breakdown:
--   what fills a busy GPU)
-- what: on a GPU busy at least half of its active span, one kind of memory-bound kernel takes a large
--   share of the kernel time: stand-alone softmax plus the bmm GEMMs around it (attention computed
--   without SDPA / flash), eager elementwise and norm kernels (no fusion), or data moved inside the device
--   (Memcpy DtoD, copy / transpose kernels: layout churn).
-- confirming: the device's kernel time by class (kineto.lib.kernel_classes) with shares; for attention
--   the softmax time, the GEMM time launched by aten::bmm / aten::baddbmm and whether fused attention
--   kernels exist at all; the ops launching the kernels (kineto-sql run reading.op_table).
-- use_instead: see each row's fix: SDPA / flash attention for unfused attention, torch.compile (or fused
--   kernels) for elementwise chains, contiguous layouts / channels_last / fewer cat and .contiguous() for
--   device-to-device copies.
-- why: the device is the critical path (busy >= min_busy_pct), so kernel time saved is step time saved.
--   impact_dur is the estimated GPU time a fix removes: the softmax time (flash keeps the GEMM FLOPs),
--   half the eager elementwise time and a quarter of the norm time (fusion), the whole copy time (an
--   upper bound for one consistent layout).
-- known_problems: attention variants SDPA cannot run (custom masks or biases some backends refuse) still
--   show softmax + bmm; a model that really is mostly pointwise (small MLPs, embeddings) has little to
--   fuse; some device copies are needed (KV-cache writes, gathering outputs).
-- example: unfused_attention_fires
-- needs: gpu
-- claims: busy.attention, busy.elementwise, busy.copy_dtod, busy.gemm
-- status: preview
-- catalog_row: major.kernel_mix
-- default min_busy_pct: 50
-- default attention_pct: 30
-- default min_softmax_pct: 5
-- default elementwise_pct: 30
-- default copy_pct: 10

-- Why these thresholds hold on any trace (shares are of the device's kernel time, communication
-- kernels excluded: they overlap compute on their own streams and are judged by the communication
-- rules):
-- * Attention. Unfused attention materializes the L x L score matrix: bmm(Q, K^T), softmax (plus scale,
--   mask, dropout), bmm(P, V). The softmax is memory-bound and grows with L^2; flash / memory-efficient
--   attention never writes that matrix and runs the same math 2-4x faster from L ~ 512 on. When the
--   unfused pieces are 30% of the kernel time, switching to scaled_dot_product_attention removes at least
--   the softmax's share and typically 15% or more of the GPU time: the largest single change on the
--   device. A softmax under 5% of the kernel time is a classifier head or an MoE router, not an L x L
--   attention, so it does not fire however large the bmm share is (batched GEMMs alone are not attention).
--   log_softmax is a loss and kernel_classes calls it a reduction. Impact: the softmax time (what the fused
--   kernel removes; the GEMM FLOPs remain).
-- * Elementwise / norm. A GEMM/conv-dominated training or inference step spends 10-25% of its kernel time
--   in pointwise and norm kernels; each of them reads and writes whole tensors and does almost no math.
--   Above 30% the device is mostly moving activations between kernels, which fusion (torch.compile, fused
--   norm / optimizer kernels) cuts by half or more. Inductor's own triton kernels are already fused and
--   are not counted. Impact: half the elementwise time (a fused chain of k ops moves the data once
--   instead of k times; half is the conservative k = 2) and a quarter of the norm time (a fused norm keeps
--   its statistics pass and loses the separate normalize / affine / activation passes around it).
-- * Copies inside the device. Memcpy DtoD and copy / transpose / cat kernels compute nothing: a model
--   needs a few (torch.cat of outputs, KV cache writes). Above 10% of the kernel time the layout is being
--   changed back and forth (.contiguous() after permute / transpose, NCHW <-> NHWC transposes around
--   convolutions, .to() of a tensor already of that dtype). Impact: the copy time (an upper bound on what
--   a consistent layout saves).
-- Only a busy GPU is judged: busy computing >= min_busy_pct of the span from its first to its last
-- non-communication activity (communication kernels are left out because a collective waiting for its
-- peers spins on the device): on an idle or waiting GPU faster kernels do not make the step shorter. The
-- gate is the device's own active span, not the step: a step that waits on its DataLoader for half its
-- time still runs its kernels back to back in the other half, and there kernel time is step time. The
-- share the row states as the device's compute share is the verdict's (kineto.lib.device_compute: busy
-- except exposed collectives over the steady windows of the step-time ledger): one number per quantity.
-- A capture of device activity alone (no host process, so no ledger and no verdict) states the span's.

INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.device_compute;

-- The op that launched each correlation id (the launch calls carrying it; max when several do).
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_kernel_mix_launch_ops(
  -- Runtime correlation id.
  correlation LONG,
  -- Launching op's name.
  op_name STRING
) AS
SELECT l.correlation, max(l.op_name) AS op_name
FROM kineto_launches AS l
WHERE
  l.correlation IS NOT NULL
GROUP BY l.correlation
ORDER BY l.correlation;

-- Activities look their launch up by correlation.
CREATE OR REPLACE PERFETTO INDEX _kineto_catalog_kernel_mix_launch_ops_corr
ON _kineto_catalog_kernel_mix_launch_ops(correlation);

-- Device activities with their class and the op that launched them (by correlation).
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_kernel_mix_acts(
  -- Device.
  device LONG,
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Class from kineto.lib.kernel_classes.
  class STRING,
  -- 1 for an inductor (triton_*) kernel.
  is_triton LONG,
  -- The launching op's name, NULL without a linked launch.
  op_name STRING
) AS
SELECT
  c.device,
  c.ts,
  c.dur,
  c.class,
  k.name GLOB 'triton_*' AS is_triton,
  lo.op_name
FROM kineto_kernels AS k
CROSS JOIN kineto_kernel_classes AS c
  USING (id)
LEFT JOIN _kineto_catalog_kernel_mix_launch_ops AS lo
  ON lo.correlation = k.correlation;

-- One row per device and cause that fires.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_kernel_mix(
  -- The GPU must be busy at least this % of its span from its first to its last activity (below it the
  -- device waits on the host between its kernels, and faster kernels do not shorten the step).
  min_busy_pct DOUBLE,
  -- softmax + bmm GEMM share of kernel time that fires unfused attention, %.
  attention_pct DOUBLE,
  -- The softmax alone must be at least this share of kernel time, %.
  min_softmax_pct DOUBLE,
  -- Eager elementwise + norm share of kernel time that fires fusion, %.
  elementwise_pct DOUBLE,
  -- Memcpy DtoD + copy-kernel share of kernel time that fires a copy storm, %.
  copy_pct DOUBLE
)
RETURNS TABLE(
  -- First activity on the device.
  ts TIMESTAMP,
  -- The device's capture span.
  dur DURATION,
  -- Estimated GPU time saved (see the header): the softmax time; half the elementwise time and a quarter
  -- of the norm time; the copy time.
  impact_dur DURATION,
  -- NULL: read over the whole capture.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Device.
  device LONG,
  -- unfused_attention, unfused_elementwise or device_copies.
  cause STRING,
  -- The share that fired, % of kernel time.
  share_pct DOUBLE,
  -- Kernel time on the device (communication excluded), summed over streams.
  kernel_dur DURATION,
  -- Compute share of the device over the steady step time (kineto.lib.device_compute: the verdict's), %.
  busy_pct DOUBLE,
  -- Busy share (non-communication work, merged) of the device's span from its first to its last
  -- activity, %: the gate (min_busy_pct).
  active_busy_pct DOUBLE,
  -- Stand-alone softmax kernel time.
  softmax_dur DURATION,
  -- GEMM kernel time launched by aten::bmm / aten::baddbmm.
  bmm_dur DURATION,
  -- Fused attention kernel time.
  fused_attention_dur DURATION,
  -- Eager (non-inductor) elementwise + norm kernel time.
  eager_elementwise_dur DURATION,
  -- Memcpy DtoD + copy-kernel time.
  copy_dur DURATION,
  -- The four largest classes with their shares, e.g. `softmax 46%, gemm 45%, elementwise 3%, ...`.
  top_classes STRING,
  -- The fix for this cause.
  fix STRING
) AS
WITH
  acts AS (
    SELECT * FROM _kineto_catalog_kernel_mix_acts WHERE class != 'communication'
  ),
  per_class AS (
    SELECT device, class, sum(dur) AS d FROM acts GROUP BY device, class
  ),
  per_device AS (
    SELECT
      device,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS span,
      sum(dur) AS total,
      sum(CASE WHEN class = 'softmax' THEN dur ELSE 0 END) AS softmax,
      sum(CASE WHEN class = 'gemm' AND op_name IN ('aten::bmm', 'aten::baddbmm') THEN dur ELSE 0 END) AS bmm,
      sum(CASE WHEN class = 'attention' THEN dur ELSE 0 END) AS fused,
      sum(CASE WHEN class IN ('elementwise', 'norm') AND NOT is_triton THEN dur ELSE 0 END) AS eager_ew,
      sum(CASE WHEN class = 'norm' AND NOT is_triton THEN dur ELSE 0 END) AS eager_norm,
      sum(CASE WHEN class IN ('memcpy_dtod', 'copy_kernel') THEN dur ELSE 0 END) AS copies
    FROM acts
    GROUP BY device
  ),
  -- Without a ledger lane for the device (a capture of device activity only, no host process to window):
  -- busy computing over the device's span, the union of non-communication activity, by one sorted pass: each activity adds what it
  -- reaches past the latest end before it (all of itself when it starts past it, as a merge would).
  busy AS (
    SELECT
      device,
      sum(IIF(prev_end IS NULL OR ts > prev_end, dur, max(ts + dur - prev_end, 0))) AS d
    FROM (
      SELECT
        device,
        ts,
        dur,
        max(ts + dur) OVER (
          PARTITION BY device
          ORDER BY ts, ts + dur
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS prev_end
      FROM acts
    )
    GROUP BY device
  ),
  top AS (
    SELECT
      device,
      group_concat(class || ' ' || printf('%.0f%%', pct), ', ') AS txt
    FROM (
      SELECT
        c.device,
        c.class,
        100.0 * c.d / max(p.total, 1) AS pct,
        row_number() OVER (PARTITION BY c.device ORDER BY c.d DESC, c.class) AS rn
      FROM per_class AS c
      JOIN per_device AS p
        USING (device)
      ORDER BY c.device, c.d DESC, c.class
    )
    WHERE
      rn <= 4
    GROUP BY device
  ),
  dev AS (
    SELECT
      p.*,
      coalesce(c.compute_pct, 100.0 * coalesce(b.d, 0) / max(p.span, 1)) AS busy_pct,
      100.0 * coalesce(b.d, 0) / max(p.span, 1) AS active_busy_pct,
      CASE
        WHEN c.compute_pct IS NOT NULL THEN printf(
          'computing %.0f%% of the steady step time, %.0f%% of',
          c.compute_pct,
          100.0 * coalesce(b.d, 0) / max(p.span, 1)
        )
        ELSE printf('busy %.0f%% of', 100.0 * coalesce(b.d, 0) / max(p.span, 1))
      END AS busy_words,
      t.txt AS top_classes
    FROM per_device AS p
    LEFT JOIN kineto_device_compute AS c
      USING (device)
    LEFT JOIN busy AS b
      USING (device)
    LEFT JOIN top AS t
      USING (device)
    WHERE
      p.total > 0
  ),
  causes AS (
    SELECT
      d.*,
      'unfused_attention' AS cause,
      100.0 * (d.softmax + d.bmm) / d.total AS share_pct,
      d.softmax AS impact,
      printf(
        'GPU %d (%s the %.3f ms from its first kernel to its last): stand-alone softmax kernels %.3f ms (%.1f%%) and bmm GEMMs %.3f ms (%.1f%%) take %.1f%% of the kernel time, %s: attention computed without a fused kernel. Kernel time by class: %s.',
        d.device, d.busy_words, d.span / 1e6, d.softmax / 1e6, 100.0 * d.softmax / d.total, d.bmm / 1e6,
        100.0 * d.bmm / d.total, 100.0 * (d.softmax + d.bmm) / d.total,
        CASE WHEN d.fused > 0 THEN printf('while fused attention kernels take only %.3f ms', d.fused / 1e6) ELSE 'with no fused attention kernel at all' END,
        d.top_classes
      ) AS evidence,
      'Use torch.nn.functional.scaled_dot_product_attention (flash / memory-efficient kernels; in Hugging Face models attn_implementation="sdpa" or "flash_attention_2") instead of matmul + softmax + matmul; check that the mask and dtype let SDPA pick a fused backend (torch.backends.cuda.sdp_kernel / sdpa_kernel).' AS fix
    FROM dev AS d
    WHERE
      100.0 * (d.softmax + d.bmm) / d.total >= $attention_pct
      AND 100.0 * d.softmax / d.total >= $min_softmax_pct
    UNION ALL
    SELECT
      d.*,
      'unfused_elementwise',
      100.0 * d.eager_ew / d.total,
      (d.eager_ew - d.eager_norm) / 2 + d.eager_norm / 4,
      printf(
        'GPU %d (%s the %.3f ms from its first kernel to its last): eager elementwise and norm kernels take %.3f ms, %.1f%% of the kernel time: the device mostly moves activations between small memory-bound kernels. Kernel time by class: %s.',
        d.device, d.busy_words, d.span / 1e6, d.eager_ew / 1e6, 100.0 * d.eager_ew / d.total, d.top_classes
      ),
      'Fuse the pointwise chains: torch.compile the model (or the hot function), fused optimizers (foreach=True / fused=True), fused norm kernels (apex / torch fused RMSNorm / LayerNorm); then the remaining kernels read and write each tensor once.'
    FROM dev AS d
    WHERE
      100.0 * d.eager_ew / d.total >= $elementwise_pct
    UNION ALL
    SELECT
      d.*,
      'device_copies',
      100.0 * d.copies / d.total,
      d.copies,
      printf(
        'GPU %d (%s the %.3f ms from its first kernel to its last): device-to-device copies (Memcpy DtoD, copy / transpose / cat kernels) take %.3f ms, %.1f%% of the kernel time: data is being re-laid out, not computed on. Kernel time by class: %s.',
        d.device, d.busy_words, d.span / 1e6, d.copies / 1e6, 100.0 * d.copies / d.total, d.top_classes
      ),
      'Keep one layout: avoid .contiguous() / .clone() after permute / transpose / view (let the consumer take strides), use channels_last for convolution nets (no NCHW <-> NHWC transposes around each conv), preallocate and write into slices instead of torch.cat in a loop, and drop .to() calls that copy to the same dtype and device.'
    FROM dev AS d
    WHERE
      100.0 * d.copies / d.total >= $copy_pct
  )
SELECT
  c.ts,
  c.span AS dur,
  CAST(c.impact AS INT) AS impact_dur,
  NULL AS step,
  c.evidence,
  c.device,
  c.cause,
  c.share_pct,
  c.total AS kernel_dur,
  c.busy_pct,
  c.active_busy_pct,
  c.softmax AS softmax_dur,
  c.bmm AS bmm_dur,
  c.fused AS fused_attention_dur,
  c.eager_ew AS eager_elementwise_dur,
  c.copies AS copy_dur,
  c.top_classes,
  c.fix
FROM causes AS c
WHERE
  c.active_busy_pct >= $min_busy_pct
ORDER BY c.device, c.cause;
