-- version: 1

INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.steady_sample;

-- How much of the analysed step time each device computes: the one definition of the compute share that
-- reading.verdict states for the step and the device rules state per device (one number per quantity).
-- The analysed windows are the steady ones (cold windows left out), or every window when the steady ones
-- are too small a sample (kineto.lib.steady_sample). compute = device busy (busy.* of kineto.lib.ledger)
-- except exposed collectives: a collective under compute costs nothing by itself, one that nothing hides
-- is communication.
CREATE OR REPLACE PERFETTO TABLE kineto_device_compute(
  -- Device index.
  device LONG,
  -- Compute time of the device over the analysed windows.
  compute_dur DURATION,
  -- The analysed windows' width on this device (its ledger time).
  lane_dur DURATION,
  -- compute_dur as % of lane_dur.
  compute_pct DOUBLE
) AS
WITH
  analysed AS (
    SELECT *
    FROM kineto_ledger
    WHERE
      device IS NOT NULL
      AND (NOT is_cold OR NOT coalesce((SELECT representative FROM kineto_steady_sample), TRUE))
  )
SELECT
  device,
  sum(CASE WHEN kind = 'busy' AND bucket != 'busy.comm_exposed' THEN dur ELSE 0 END) AS compute_dur,
  sum(dur) AS lane_dur,
  100.0 * sum(CASE WHEN kind = 'busy' AND bucket != 'busy.comm_exposed' THEN dur ELSE 0 END) / max(sum(dur), 1)
    AS compute_pct
FROM analysed
GROUP BY device
ORDER BY device;
