-- version: 1

-- What each idle or host bucket of the step-time ledger (kineto.lib.ledger) means, and the first thing to
-- try when nothing more specific explains it: the default explainer of a bucket (catalog.unexplained_time).
-- The specific detectors refine these (catalog.small_op_storm for idle.launch, catalog.sync_forcing_op
-- for idle.sync, ...); the fixes follow the seed's fault catalog and the PyTorch docs' performance tuning
-- guide. `words` is also how reading.verdict's sentence names the top cause.
CREATE OR REPLACE PERFETTO TABLE kineto_ledger_buckets(
  -- Ledger bucket (idle.* or host.*).
  bucket STRING,
  -- What the time is, in words.
  words STRING,
  -- What to try first.
  fix STRING
) AS
WITH buckets(bucket, words, fix) AS (
  VALUES
    ('idle.sync', 'the host waiting in device synchronizes', 'Remove the host reads that synchronize the step (.item(), .cpu(), printing or branching on tensor values): keep values on the device, read them every N steps (catalog.sync_forcing_op names the op).'),
    ('idle.blocking_copy', 'the host waiting in blocking copies', 'Copy from pinned memory with non_blocking=True (DataLoader pin_memory=True) and avoid device-to-host copies inside the step.'),
    ('idle.dataloader', 'the host waiting for the DataLoader', 'Give the DataLoader worker processes (num_workers), pin_memory=True and prefetching, and move heavy per-batch work out of the step.'),
    ('idle.comm_wait', 'the host waiting in host-side collectives', 'Overlap communication with compute (asynchronous collectives, DDP / FSDP bucketing) and check for a slower rank.'),
    ('idle.gc', 'Python garbage collection', 'gc.freeze() after setup, or gc.disable() with gc.collect() between steps.'),
    ('idle.profiler', 'profiler overhead', 'Profile a shorter active window with fewer options (no profile_memory / with_stack) when sizing.'),
    ('idle.alloc', 'device memory allocation and frees', 'Keep shapes static (pad / bucket), reuse buffers, never call torch.cuda.empty_cache() in the loop, try expandable_segments:True.'),
    ('idle.launch', 'the host issuing kernel launches', 'The device waits on kernel launches: fuse small ops (torch.compile), capture the step in CUDA graphs (torch.compile mode="reduce-overhead"), use fused optimizers, and give each op more work.'),
    ('idle.host_compute', 'host compute that launches nothing (Python, ATen CPU work)', 'Move CPU work that launches nothing off the step (DataLoader workers, GPU-side transforms), keep tensors on the device, and overlap host work with device work.'),
    ('idle.unattributed', 'nothing recorded on the host', 'Nothing on the host explains this idle time: capture with record_function ranges (and with_stack for one attribution run) around the loop, and check other threads and processes.'),
    ('host.sync_read', 'host reads of tensor values', 'Read tensor values less often (.item(), .tolist(), nonzero()): each is a device sync once the same code runs on a GPU.'),
    ('host.comm_wait', 'host-side collectives', 'Overlap host-side collectives with compute, or move them to a device backend (NCCL).'),
    ('host.dataloader', 'the DataLoader', 'Give the DataLoader worker processes (num_workers) and prefetching, and keep heavy Python out of collate_fn.'),
    ('host.gc', 'Python garbage collection', 'gc.freeze() after setup, or gc.disable() with gc.collect() between steps.'),
    ('host.profiler', 'profiler overhead', 'Profile a shorter active window with fewer options when sizing.'),
    ('host.ops', 'ATen CPU ops', 'The ATen ops'' own CPU work is the step: see guide.overhead_vs_compute (many small calls: fuse and batch them, torch.compile; large calls: less or cheaper work, a lower precision, more threads).'),
    ('host.python', 'Python outside ATen ops', 'Python between the ops is the step: vectorize Python loops into tensor ops, remove per-step Python work, torch.compile.'),
    ('host.unattributed', 'nothing recorded', 'Nothing recorded explains this time: capture with record_function ranges (and with_stack for one attribution run) and check other threads.')
)
SELECT bucket, words, fix FROM buckets;
