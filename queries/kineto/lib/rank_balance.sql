-- version: 1
-- locked: 1 6a0e1a2a8458d254
-- lib: lib.collectives@3 lib.dataloader@4 lib.device_busy@3 lib.event_categories@4 lib.gpu_idle@1
--   lib.host_slices@8 lib.host_tree@3 lib.internal_reads@1 lib.interval_merge@3 lib.iterations@6
--   lib.kernel_classes@3 lib.kernels@6 lib.launches@6 lib.ledger@8 lib.runtime_calls@4 lib.steps@9
--   lib.stream_busy@4 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- A rank's own work against its wait for its peers, per steady iteration window, from the step-time
-- ledger (kineto.lib.ledger): the one definition that catalog.straggler_rank (seen from one rank) and the
-- cross-rank straggler reading (reading.rank_balance, kineto_sql/ranks.py, queries/fleet) both compare.
--
-- * wait: the ledger's communication time, exactly what reading.verdict counts as communication:
--   busy.comm_exposed (collective kernels that no compute hides: on a waiting rank they sit in the kernel
--   until the slowest peer arrives) + idle.comm_wait (the device idle while the host is in a host-side
--   collective) + host.comm_wait (a CPU trainer inside gloo collectives).
-- * own work: what the rank itself computes. With device activity: the device busy time except exposed
--   collectives (kernels, copies, collectives hidden under compute). Without (a CPU trainer): every host
--   bucket except host.comm_wait: the host is the whole step, so whatever it does that is not waiting on a
--   collective is its own work.
-- Every rank of a data-parallel job does the same work per step, so the rank whose own work is longest
-- (or that starts late) makes every other rank wait that much longer in its collectives: a waiting rank
-- shows wait well above its own work, the straggler the reverse. Device idle outside collectives (syncs,
-- launches, host compute) is neither: it is the rank's host-side cost, read by the other findings.
CREATE OR REPLACE PERFETTO TABLE kineto_rank_balance(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Iteration number.
  step LONG,
  -- Window source (kineto_iterations.source).
  source STRING,
  -- Window start.
  window_ts TIMESTAMP,
  -- Window width.
  window_dur DURATION,
  -- Ledger lanes of the window (devices, or 1 host-only lane).
  lanes LONG,
  -- The capture has device activity.
  has_device BOOL,
  -- Own work, summed over the lanes.
  own_work_dur DURATION,
  -- Wait in collectives, summed over the lanes.
  wait_dur DURATION
) AS
SELECT
  window_id,
  max(step) AS step,
  max(source) AS source,
  max(window_ts) AS window_ts,
  max(window_dur) AS window_dur,
  count(DISTINCT coalesce(device, -1)) AS lanes,
  max(device IS NOT NULL) AS has_device,
  sum(
    CASE
      WHEN kind = 'busy' AND bucket != 'busy.comm_exposed' THEN dur
      WHEN kind = 'host' AND bucket != 'host.comm_wait' THEN dur
      ELSE 0
    END
  ) AS own_work_dur,
  sum(CASE WHEN bucket IN ('busy.comm_exposed', 'idle.comm_wait', 'host.comm_wait') THEN dur ELSE 0 END) AS wait_dur
FROM kineto_ledger
WHERE
  NOT is_cold
GROUP BY window_id
ORDER BY window_id;
