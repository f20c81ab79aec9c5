-- version: 2

-- Peak numbers of the accelerators a roofline is drawn against, shipped as data (one VALUES table, so a
-- paste bundle carries it into the Perfetto UI). Dense peaks, never the "with sparsity" figure the
-- datasheets print first: PyTorch's GEMMs and convolutions do not use 2:4 structured sparsity.
--
-- Conventions, per column:
-- - bf16 / fp16 / tf32: tensor-core (NVIDIA) or matrix-core (AMD MFMA) dense peak, TFLOP/s.
-- - fp32: what a plain fp32 GEMM can reach: CUDA-core FP32 on NVIDIA (PyTorch leaves TF32 off for
--   matmul by default), MFMA FP32 matrix peak on AMD (rocBLAS sgemm uses it).
-- - hbm_tbps: memory bandwidth, TB/s (10^12 bytes/s).
-- - link_gbps: per-GPU peak bandwidth of the scale-up link in ONE direction, GB/s (NVLink / Infinity
--   Fabric aggregate over links, halved from the bidirectional figure datasheets print; PCIe x16 for
--   PCIe cards). This is the number NCCL's bus bandwidth is compared with (nccl-tests PERFORMANCE.md).
-- - AMD MI250X / MI250 / MI210: PyTorch sees each GCD as one device; MI250X and MI250 numbers are per
--   GCD (half the per-OAM datasheet figure). MI210 is one GCD.
-- Names are matched with GLOB on the device name Kineto writes in `deviceProperties[].name`
-- (e.g. `NVIDIA H100 80GB HBM3`, `AMD Instinct MI300X`, `Tesla V100-SXM2-32GB`); the first match by
-- `priority` wins, so specific variants (PCIe, NVL, 40GB) sit before the generic pattern.
CREATE OR REPLACE PERFETTO TABLE kineto_device_specs(
  -- Short model name, e.g. H100 SXM.
  model STRING,
  -- GLOB over the deviceProperties name.
  name_glob STRING,
  -- Lower wins when several patterns match one name.
  priority LONG,
  -- NVIDIA or AMD.
  vendor STRING,
  -- Dense BF16 matrix peak, TFLOP/s (NULL: no BF16 matrix units).
  bf16_tflops DOUBLE,
  -- Dense FP16 matrix peak, TFLOP/s.
  fp16_tflops DOUBLE,
  -- Dense TF32 matrix peak, TFLOP/s (NULL: none).
  tf32_tflops DOUBLE,
  -- FP32 peak of a plain fp32 GEMM, TFLOP/s (see the header).
  fp32_tflops DOUBLE,
  -- Memory bandwidth, TB/s.
  hbm_tbps DOUBLE,
  -- Scale-up link bandwidth per GPU, one direction, GB/s.
  link_gbps DOUBLE,
  -- Where the numbers come from (datasheet name and URL).
  source STRING
) AS
WITH specs(model, name_glob, priority, vendor, bf16, fp16, tf32, fp32, hbm, link, source) AS (
  VALUES
    ('V100 PCIe', '*V100-PCIE*', 1, 'NVIDIA', NULL, 112.0, NULL, 14.0, 0.9, 16.0,
     'NVIDIA Tesla V100 datasheet (volta-v100-datasheet-update-us-1165301-r5), https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf'),
    ('V100 SXM2', '*V100*', 2, 'NVIDIA', NULL, 125.0, NULL, 15.7, 0.9, 150.0,
     'NVIDIA Tesla V100 datasheet (SXM2; DGX Station DGXS uses the same part; NVLink 300 GB/s bidirectional), https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf'),
    ('A100 PCIe 40GB', '*A100*PCIE*40GB*', 1, 'NVIDIA', 312.0, 312.0, 156.0, 19.5, 1.555, 32.0,
     'NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4), https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf'),
    ('A100 PCIe 80GB', '*A100*PCIe*', 2, 'NVIDIA', 312.0, 312.0, 156.0, 19.5, 1.935, 32.0,
     'NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe: 1935 GB/s), https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf'),
    ('A100 SXM4 80GB', '*A100*80GB*', 3, 'NVIDIA', 312.0, 312.0, 156.0, 19.5, 2.039, 300.0,
     'NVIDIA A100 Tensor Core GPU datasheet (80GB SXM: 2039 GB/s; NVLink 600 GB/s bidirectional), https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf'),
    ('A100 SXM4 40GB', '*A100*', 4, 'NVIDIA', 312.0, 312.0, 156.0, 19.5, 1.555, 300.0,
     'NVIDIA A100 Tensor Core GPU datasheet (40GB SXM: 1555 GB/s; PG509 boards are SXM4), https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf'),
    ('A10', '*A10', 1, 'NVIDIA', 125.0, 125.0, 62.5, 31.2, 0.6, 32.0,
     'NVIDIA A10 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/products/a10-gpu/'),
    ('L4', '*L4', 1, 'NVIDIA', 121.0, 121.0, 60.0, 30.3, 0.3, 32.0,
     'NVIDIA L4 Tensor Core GPU datasheet (242 / 120 TFLOPS with sparsity), https://www.nvidia.com/en-us/data-center/l4/'),
    ('H100 PCIe', '*H100*PCIe*', 1, 'NVIDIA', 756.0, 756.0, 378.0, 51.2, 2.0, 64.0,
     'NVIDIA H100 Tensor Core GPU datasheet (PCIe: 1513 TFLOPS bf16 with sparsity), https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet'),
    ('H100 NVL', '*H100*NVL*', 1, 'NVIDIA', 835.0, 835.0, 418.0, 60.0, 3.9, 300.0,
     'NVIDIA H100 Tensor Core GPU datasheet (NVL: 1671 TFLOPS bf16 with sparsity, NVLink bridge 600 GB/s), https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet'),
    ('H100 SXM', '*H100*', 2, 'NVIDIA', 989.4, 989.4, 494.7, 66.9, 3.35, 450.0,
     'NVIDIA H100 Tensor Core GPU datasheet (SXM5 80GB HBM3: 1979 TFLOPS bf16 with sparsity, NVLink 900 GB/s bidirectional), https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet'),
    ('H200 SXM', '*H200*', 1, 'NVIDIA', 989.4, 989.4, 494.7, 66.9, 4.8, 450.0,
     'NVIDIA H200 Tensor Core GPU datasheet (SXM 141GB HBM3e), https://www.nvidia.com/en-us/data-center/h200/'),
    ('B200', '*B200*', 1, 'NVIDIA', 2250.0, 2250.0, 1100.0, 75.0, 8.0, 900.0,
     'NVIDIA HGX B200 specifications (per GPU: 4.5 PFLOPS fp16 with sparsity, NVLink 5 1.8 TB/s bidirectional), https://www.nvidia.com/en-us/data-center/hgx/'),
    ('MI210', '*MI210*', 1, 'AMD', 181.0, 181.0, NULL, 45.3, 1.6384, 150.0,
     'AMD Instinct MI210 product page, https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html'),
    ('MI250X (per GCD)', '*MI250X*', 1, 'AMD', 191.5, 191.5, NULL, 47.9, 1.6384, 200.0,
     'AMD Instinct MI250X product page (per OAM: 383 TFLOPS fp16/bf16, 95.7 fp32 matrix, 3.2768 TB/s; halved per GCD), https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html'),
    ('MI250 (per GCD)', '*MI250*', 2, 'AMD', 181.0, 181.0, NULL, 45.3, 1.6384, 200.0,
     'AMD Instinct MI250 product page (per OAM: 362.1 TFLOPS fp16/bf16, 90.5 fp32 matrix, 3.2768 TB/s; halved per GCD), https://www.amd.com/en/products/accelerators/instinct/mi200/mi250.html'),
    ('MI300X', '*MI300X*', 1, 'AMD', 1307.4, 1307.4, 653.7, 163.4, 5.3, 448.0,
     'AMD Instinct MI300X data sheet (7 Infinity Fabric links x 128 GB/s bidirectional), https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html'),
    ('MI325X', '*MI325X*', 1, 'AMD', 1307.4, 1307.4, 653.7, 163.4, 6.0, 448.0,
     'AMD Instinct MI325X data sheet (256GB HBM3E), https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html')
)
SELECT
  model,
  name_glob,
  priority,
  vendor,
  bf16 AS bf16_tflops,
  fp16 AS fp16_tflops,
  tf32 AS tf32_tflops,
  fp32 AS fp32_tflops,
  hbm AS hbm_tbps,
  link AS link_gbps,
  source
FROM specs;

-- The exponential rate of each NVIDIA model, T exp/s: the roof of an attention kernel's softmax
-- (kineto.lib.op_roofline). Each SM's special-function units return 16 results per clock for exp2
-- (CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table, every compute capability from
-- 5.0 on); per clock the SM's tensor cores do 1024 dense FP16 FLOPs on Volta, GA10x and Ada, 2048 on A100,
-- 4096 on Hopper and 8192 on Blackwell, so the rate is the dense FP16 matrix peak above x 16 / that, at
-- the clock the peak is quoted at: H100 SXM 989.4 / 256 = 3.86 T/s, "3.9 TFLOPS of special functions"
-- in FlashAttention-3 (Shah et al. 2024, section 3.1). AMD models have no row: their transcendental rate
-- is not published per model, and their attention is judged by the matrix peak alone.
CREATE OR REPLACE PERFETTO TABLE _kineto_device_exp_rates(
  -- Short model name, as in kineto_device_specs.
  model STRING,
  -- Exponentials per second, T/s.
  exp_tops DOUBLE
) AS
SELECT
  model,
  fp16_tflops * 16.0 / CASE
    WHEN model GLOB 'A100*' THEN 2048
    WHEN model GLOB 'H1*' OR model GLOB 'H2*' THEN 4096
    WHEN model GLOB 'B*' THEN 8192
    ELSE 1024
  END AS exp_tops
FROM kineto_device_specs
WHERE
  vendor = 'NVIDIA';

-- The spec row of one device name (deviceProperties[].name), or no row when the model is unknown.
CREATE OR REPLACE PERFETTO FUNCTION _kineto_device_spec_for(
  -- Device name as Kineto writes it, e.g. `NVIDIA H100 80GB HBM3`.
  device_name STRING
)
RETURNS TABLE(
  -- Short model name.
  model STRING,
  -- Dense BF16 matrix peak, TFLOP/s.
  bf16_tflops DOUBLE,
  -- Dense FP16 matrix peak, TFLOP/s.
  fp16_tflops DOUBLE,
  -- Dense TF32 matrix peak, TFLOP/s.
  tf32_tflops DOUBLE,
  -- FP32 GEMM peak, TFLOP/s.
  fp32_tflops DOUBLE,
  -- Memory bandwidth, TB/s.
  hbm_tbps DOUBLE,
  -- Scale-up link bandwidth per GPU, one direction, GB/s.
  link_gbps DOUBLE,
  -- Datasheet.
  source STRING
) AS
SELECT model, bf16_tflops, fp16_tflops, tf32_tflops, fp32_tflops, hbm_tbps, link_gbps, source
FROM kineto_device_specs
WHERE
  $device_name GLOB name_glob
ORDER BY priority
LIMIT 1;
