-- id: fleet.collective_calls
-- version: 1
-- kind: fleet
-- title: The matched calls with the two rules' flags: slow (far under the link) and skewed (the early ranks wait longer than the transfer)
-- reads: fleet_collective_skew
-- param: slow_pct DOUBLE (25), slow_min_bytes DOUBLE (32 MiB), skew_min_us DOUBLE (100), skew_factor DOUBLE (2)
-- why: slow: busbw under slow_pct of the GPU's scale-up link bandwidth (kineto.lib.device_specs, one
--   direction) for a message of at least slow_min_bytes. nccl-tests on NVLink / Infinity Fabric nodes reach
--   60-90% of the link at >= 32 MiB for every collective; below a quarter of it the traffic is on a slower path
--   (PCIe or the network instead of NVLink, a broken topology, a misconfigured NCCL_P2P / NCCL_ALGO), or it
--   is contended. Smaller messages are latency-bound and not judged against the link. skewed: a start skew of
--   at least skew_min_us (100 us, ~10x NCCL's per-call latency on one node), at least skew_factor x the call's
--   latency, and wider than the clock band: the early ranks wait longer than the transfer takes, so the time
--   is lost to imbalance before the call (compute, data loading, a sync), not to the network.
SELECT *,
       coalesce(pct_of_link IS NOT NULL AND size_bytes >= $slow_min_bytes AND pct_of_link < $slow_pct, FALSE) AS slow,
       coalesce(ranks > 1 AND start_skew_us >= $skew_min_us AND start_skew_us >= $skew_factor * latency_us
                AND start_skew_us > band_us, FALSE) AS skewed
FROM fleet_collective_skew;
