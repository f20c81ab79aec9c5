-- version: 3
-- locked: 3 21ef5b20764036d4
-- lib: lib.event_categories@4 lib.kernels@6 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.kernels;

-- What each device activity computes, by name, finer than kineto_kernels.class (compute / communication
-- / memory): the classes an expert reads a busy GPU by. The classes (stable values; other modules and
-- the ledger group by them):
--   gemm           matrix multiplies: cuBLAS / cuBLASLt (`*gemm*`, `*gemv*`, `nvjet_*`, split-K reduce,
--                  the cuBLASLt epilogue kernel), cutlass gemm (`*gemm*`, but not `fbgemm`: FBGEMM's
--                  namespace holds sparse and embedding ops), rocBLAS / Tensile / hipBLASLt (`Cijk_*`), CK
--                  gemm, triton matmul templates (`triton_tem_*`, `*matmul*`), TRT-LLM / flashinfer `bmm_*`.
--   conv           convolutions: cuDNN (`*scudnn*`, implicit_convolve_sgemm, fprop / dgrad / wgrad,
--                  winograd, im2col), cutlass fprop / dgrad / wgrad, MIOpen (`igemm_fwd|bwd|wrw_*`,
--                  `*sp3asmconv*`, naive_conv), CK grouped conv.
--   attention      fused attention: flash (pytorch_flash, flash_attn, flashinfer), memory-efficient /
--                  xformers / cutlass / CK fmha, cuDNN SDPA, vLLM / sglang paged and unified attention,
--                  triton `attn_fwd` / `attn_bwd`.
--   softmax        a stand-alone softmax kernel (cunn_SoftMaxForward, softmax_warp_*, inductor
--                  `*_softmax*`): the middle of an unfused attention. log_softmax is a loss reduction.
--   norm           layer / batch / group / instance / RMS norm (ATen, cuDNN bn_*, MIOpen, apex, vLLM,
--                  aiter, CK), and inductor reductions with rsqrt (RMSNorm).
--   reduction      reductions and losses: ATen reduce_kernel, cub reduce, inductor `triton_red_*` /
--                  `triton_per_*`, cross entropy / nll_loss / log_softmax, argmax.
--   elementwise    pointwise work: ATen (vectorized_|unrolled_)elementwise_kernel, inductor
--                  `triton_poi_*`, multi_tensor_apply / foreach (optimizers), activations, dropout,
--                  rotary embedding, MIOpen SubTensorOp.
--   copy_kernel    data moved by a kernel rather than a copy engine: direct_copy_kernel (.contiguous(),
--                  .to(dtype)), dtype copy kernels, CatArrayBatchedCopy, layout transposes
--                  (batched_transpose, nchwToNhwc), permutes, vLLM's KV-cache writes (reshape_and_cache).
--                  Together with memcpy_dtod, the device-to-device traffic.
--   embedding      embedding lookups and their backward (fbgemm split_embedding_*, embedding_bag).
--   communication  collectives: everything kineto_kernels calls communication (NCCL / RCCL / MSCCL) plus
--                  symmetric-memory and custom all-reduce kernels (multimem_all_reduce,
--                  cross_device_reduce, one_shot / two_shot all-reduce).
--   memcpy_htod, memcpy_dtoh, memcpy_dtod
--                  copy-engine transfers by direction (from the activity name `Memcpy HtoD (...)`).
--   memcpy_other   peer-to-peer, host-to-host and direction-unknown transfers (ROCm blit copies, MTIA DMA).
--   memset         memset activities and ROCm fill blits.
--   other          anything else (sort, scan, pooling, index, random, user kernels).
-- Rules are GLOB patterns over the lower-cased kernel name without its parameter list; the lowest
-- priority number wins. The order carries the judgement: communication and fused attention names also contain `reduce` / `gemm`; log_softmax is a
-- loss; inductor names carry every op fused into the kernel (`triton_poi_fused_convolution_relu` is a
-- pointwise epilogue, not a convolution), so the inductor prefix decides before the op words; conv
-- before gemm because cuDNN / MIOpen conv kernels are implicit gemms; copies before elementwise because
-- ATen's copy is an elementwise_kernel instantiation.
CREATE OR REPLACE PERFETTO TABLE _kineto_kernel_classes_rules(
  -- GLOB pattern over lower(name).
  pattern STRING,
  -- The class (see above).
  class STRING,
  -- Lower wins when several rules match.
  priority LONG
) AS
WITH rules(pattern, class, priority) AS (
  VALUES
    ('*nccl*', 'communication', 1),
    ('*rccl*', 'communication', 1),
    ('*msccl*', 'communication', 1),
    ('*multimem*', 'communication', 1),
    ('*all_reduce*', 'communication', 1),
    ('*allreduce*', 'communication', 1),
    ('*cross_device_reduce*', 'communication', 1),
    ('*all_gather*', 'communication', 1),
    ('*allgather*', 'communication', 1),
    ('*reduce_scatter*', 'communication', 1),
    ('*reducescatter*', 'communication', 1),
    ('*all_to_all*', 'communication', 1),
    ('*alltoall*', 'communication', 1),
    ('*reshape_and_cache*', 'copy_kernel', 1),
    ('*flash*', 'attention', 2),
    ('*fmha*', 'attention', 2),
    ('*attention*', 'attention', 2),
    ('*sdpa*', 'attention', 2),
    ('*attn_fwd*', 'attention', 2),
    ('*attn_bwd*', 'attention', 2),
    ('*mha_fwd*', 'attention', 2),
    ('*mha_bwd*', 'attention', 2),
    ('*log_softmax*', 'reduction', 3),
    ('*logsoftmax*', 'reduction', 3),
    ('*rotary*', 'elementwise', 3),
    ('*softmax*', 'softmax', 4),
    ('*layer_norm*', 'norm', 5),
    ('*layernorm*', 'norm', 5),
    ('*batch_norm*', 'norm', 5),
    ('*batchnorm*', 'norm', 5),
    ('*group_norm*', 'norm', 5),
    ('*groupnorm*', 'norm', 5),
    ('*instance_norm*', 'norm', 5),
    ('*instancenorm*', 'norm', 5),
    ('*rms_norm*', 'norm', 5),
    ('*rmsnorm*', 'norm', 5),
    ('*bn_fw*', 'norm', 5),
    ('*bn_bw*', 'norm', 5),
    ('*rowwisemoments*', 'norm', 5),
    ('*gammabetabackward*', 'norm', 5),
    ('triton_*rsqrt*', 'norm', 5),
    ('*embedding*', 'embedding', 6),
    ('triton_tem_*', 'gemm', 6),
    ('triton_poi_*', 'elementwise', 6),
    ('triton_red_*', 'reduction', 6),
    ('triton_per_*', 'reduction', 6),
    ('*convolve*', 'conv', 7),
    ('*convolution*', 'conv', 7),
    ('*conv2d*', 'conv', 7),
    ('*conv3d*', 'conv', 7),
    ('*conv1d*', 'conv', 7),
    ('*grouped_conv*', 'conv', 7),
    ('*conv_fwd*', 'conv', 7),
    ('*conv_bwd*', 'conv', 7),
    ('*naive_conv*', 'conv', 7),
    ('*im2col*', 'conv', 7),
    ('*asmconv*', 'conv', 7),
    ('*scudnn*', 'conv', 7),
    ('*fprop*', 'conv', 7),
    ('*dgrad*', 'conv', 7),
    ('*wgrad*', 'conv', 7),
    ('*winograd*', 'conv', 7),
    ('igemm_fwd*', 'conv', 7),
    ('igemm_bwd*', 'conv', 7),
    ('igemm_wrw*', 'conv', 7),
    ('gemm*', 'gemm', 8),
    ('*[^b]gemm*', 'gemm', 8),
    ('*gemv*', 'gemm', 8),
    ('*cublas*', 'gemm', 8),
    ('*splitkreduce*', 'gemm', 8),
    ('epilogue::impl::*', 'gemm', 8),
    ('nvjet*', 'gemm', 8),
    ('cijk_*', 'gemm', 8),
    ('*hipblaslt*', 'gemm', 8),
    ('*rocblas*', 'gemm', 8),
    ('*matmul*', 'gemm', 8),
    ('bmm_*', 'gemm', 8),
    ('*direct_copy_kernel*', 'copy_kernel', 9),
    ('*copy*', 'copy_kernel', 9),
    ('*catarraybatchedcopy*', 'copy_kernel', 9),
    ('*batched_transpose*', 'copy_kernel', 9),
    ('*nchwtonhwc*', 'copy_kernel', 9),
    ('*nhwctonchw*', 'copy_kernel', 9),
    ('*transpose*', 'copy_kernel', 9),
    ('*permute*', 'copy_kernel', 9),
    ('*reduce*', 'reduction', 11),
    ('*reduction*', 'reduction', 11),
    ('*cross_entropy*', 'reduction', 11),
    ('*nll_loss*', 'reduction', 11),
    ('*argmax*', 'reduction', 11),
    ('*argmin*', 'reduction', 11),
    ('*elementwise*', 'elementwise', 12),
    ('*pointwise*', 'elementwise', 12),
    ('*multi_tensor_apply*', 'elementwise', 12),
    ('*foreach*', 'elementwise', 12),
    ('*act_and_mul*', 'elementwise', 12),
    ('*silu*', 'elementwise', 12),
    ('*gelu*', 'elementwise', 12),
    ('*relu*', 'elementwise', 12),
    ('*sigmoid*', 'elementwise', 12),
    ('*dropout*', 'elementwise', 12),
    ('subtensorop*', 'elementwise', 12),
    ('*fill*', 'elementwise', 12)
)
SELECT
  pattern,
  class,
  priority
FROM rules;

-- The class of each distinct kernel name (rules are matched once per name, not once per activity).
-- Rules look at the kernel's own name, not its parameter list: a demangled name carries every argument
-- type (`fbgemm_gpu::FixedDivisor`, `flashinfer::QuantizationSFLayout`), which would match the rules of
-- other libraries. The core is the name before its first `(`, after `(anonymous namespace)` is folded
-- and a leading `std::enable_if<...>::type` return type (vLLM's kernels) is dropped; template arguments
-- before that `(` stay (the functor tells what an ATen elementwise_kernel computes).
CREATE OR REPLACE PERFETTO TABLE _kineto_kernel_classes_by_name(
  -- Activity name.
  name STRING,
  -- Class from the name rules; NULL when none matches.
  name_class STRING
) AS
WITH
  -- every device activity name once: kineto.lib.kernels' per-name table (a superset of the kernel names;
  -- a DISTINCT over the activities here sorts all of them, 0.1 s at 37k activities)
  names AS (
    SELECT name FROM _kineto_kernel_name_classes
  ),
  folded AS (
    SELECT
      name,
      lower(replace(name, '(anonymous namespace)', 'anonymous_namespace')) AS low
    FROM names
  ),
  unwrapped AS (
    SELECT
      name,
      CASE
        WHEN low GLOB 'std::enable_if<*>::type *' THEN substr(low, instr(low, '>::type ') + 8)
        ELSE low
      END AS low
    FROM folded
  ),
  -- Materialized: the rule subquery below reads core once per rule; inlined, the folding above would
  -- run again for each of them.
  cores AS MATERIALIZED (
    SELECT
      name,
      CASE WHEN instr(low, '(') > 0 THEN substr(low, 1, instr(low, '(') - 1) ELSE low END AS core
    FROM unwrapped
  )
SELECT
  c.name,
  (
    SELECT r.class
    FROM _kineto_kernel_classes_rules AS r
    WHERE
      c.core GLOB r.pattern
    ORDER BY r.priority
    LIMIT 1
  ) AS name_class
FROM cores AS c
-- Not ascending by name: on a table sorted by name SQLite looks each activity's name up through the
-- engine's sorted-column search, three times the cost of the join it plans for an unsorted one.
ORDER BY c.name DESC;

-- One row per device activity of kineto_kernels (same ids), with its fine class. Memcpy activities
-- take their direction from the name Kineto writes (`Memcpy HtoD (Pageable -> Device)`, `Memcpy DtoD
-- (Device -> Device)`, `Memcpy PtoP ...`); memsets are memset; a kernel that kineto_kernels calls
-- memory (ROCm `__amd_rocclr_copy*` / `fill*` blits, MTIA `dma_*`) is memcpy_other or memset; a kernel
-- that kineto_kernels calls communication stays communication; every other kernel takes its class from
-- the name rules, else `other`.
CREATE OR REPLACE PERFETTO TABLE kineto_kernel_classes(
  -- Slice id of the activity (= kineto_kernels.id).
  id JOINID(slice.id),
  -- Start on the device clock.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Device index.
  device LONG,
  -- Stream.
  stream LONG,
  -- gemm, conv, attention, softmax, norm, reduction, elementwise, copy_kernel, embedding,
  -- communication, memcpy_htod, memcpy_dtoh, memcpy_dtod, memcpy_other, memset, other.
  class STRING
) AS
SELECT
  k.id,
  k.ts,
  k.dur,
  k.device,
  k.stream,
  CASE
    WHEN k.kind = 'memset' THEN 'memset'
    WHEN k.kind = 'memcpy' AND k.name GLOB 'Memcpy HtoD*' THEN 'memcpy_htod'
    WHEN k.kind = 'memcpy' AND k.name GLOB 'Memcpy DtoH*' THEN 'memcpy_dtoh'
    WHEN k.kind = 'memcpy' AND k.name GLOB 'Memcpy DtoD*' THEN 'memcpy_dtod'
    WHEN k.kind = 'memcpy' THEN 'memcpy_other'
    WHEN k.class = 'memory' AND lower(k.name) GLOB '*fill*' THEN 'memset'
    WHEN k.class = 'memory' THEN 'memcpy_other'
    WHEN k.class = 'communication' THEN 'communication'
    ELSE coalesce(b.name_class, 'other')
  END AS class
FROM kineto_kernels AS k
-- One lookup per activity into the few distinct names.
LEFT JOIN _kineto_kernel_classes_by_name AS b
  ON b.name = k.name
ORDER BY k.ts;
