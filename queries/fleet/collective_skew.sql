-- id: fleet.collective_skew
-- version: 2
-- kind: fleet
-- title: Every collective call matched across ranks: size, latency, bus bandwidth, start / end skew on aligned clocks, the early ranks' wait
-- reads: collectives, fleet_clock_check, fleet_clock_offsets
-- why: a rank's kernel starts when it arrives and ends when the data is through: the last rank to arrive
--   waits for nobody, so the shortest duration is the transfer (latency), the start skew (last start - first
--   start) is the imbalance before the call, and the early ranks' wait is the sum over ranks of (last start -
--   own start). Starts and ends are on the job's clock with each rank's offset (fleet.clock_offsets) taken
--   off. A call that is not one call on every rank (status other than `ok`), or any call of a job where some
--   are not (a sampled capture shifts every later pair), has no latency, bandwidth, skew, wait or first / last
--   rank: they would measure the capture, not the job. Where no synchronizing collective gives a clock band,
--   latency and bandwidth stand but skew, wait and first / last rank do not. Where the ends disagree too much
--   to align (fleet.clock_offsets), the raw clocks stand and the wide band bounds every skew claim. band_us
--   is twice the widest clock band among the call's ranks: a skew inside it is no claim. ends_apart: after
--   alignment the ends of a synchronizing collective should coincide; ends further apart than the band mean
--   one rank's kernel kept running after the others had finished (a slow last hop, a preempted kernel).
--   skew_to_transfer is the start skew over the latency: above 1 the ranks wait longer than the data takes.
--   Sizes and bandwidth follow NCCL's nccl-tests (doc/PERFORMANCE.md): size S is the message for all_reduce,
--   broadcast, reduce, send_recv; the gathered output for all_gather (n x the input when only the input is
--   recorded); the full input buffer of one rank for reduce_scatter and all_to_all. algbw = S / latency;
--   busbw = algbw x the bus factor: all_reduce 2(n-1)/n, all_gather, reduce_scatter and all_to_all (n-1)/n,
--   broadcast, reduce and send_recv 1; busbw is what compares with the link's bandwidth in one direction.
--   n is the group size the trace records, else the ranks holding the call. imbalance (all_to_allv): the
--   largest per-destination split over the mean split (`In split size`), else the largest rank's message over
--   the mean message; 1.0 is balanced. Ties of first / last go to the lowest rank.
CREATE OR REPLACE TABLE fleet_collective_skew AS
WITH aligned AS (
  SELECT c.rank, c.step, coalesce(c.pg, '') AS pg, c.collective, c.seq, c.dur, c.in_bytes, c.out_bytes,
         c.group_size, c.link_gbps, k.status,
         c.start_ns - o.applied_offset_ns AS t0, c.start_ns - o.applied_offset_ns + c.dur AS t1,
         coalesce(o.band_us, 0.0) AS band_us, o.skew_readable, o.calls_match,
         (SELECT list_max(s) / list_avg(s) FROM (SELECT TRY_CAST(c.in_split AS DOUBLE[]) AS s)
          WHERE len(s) > 0 AND list_sum(s) > 0) AS split_imbalance
  FROM collectives c
  JOIN fleet_clock_offsets o USING (rank)
  JOIN fleet_clock_check k ON k.step IS NOT DISTINCT FROM c.step AND k.pg = coalesce(c.pg, '')
       AND k.collective = c.collective AND k.seq IS NOT DISTINCT FROM c.seq
),
windowed AS (
  SELECT *, max(t0) OVER w AS last_t0, coalesce(max(group_size) OVER w, count(*) OVER w) AS call_n
  FROM aligned WINDOW w AS (PARTITION BY step, pg, collective, seq)
),
sized AS (
  SELECT *, CASE WHEN collective = 'all_gather' THEN coalesce(out_bytes, in_bytes * call_n)
                 WHEN collective = 'reduce_scatter' THEN coalesce(in_bytes, out_bytes * call_n)
                 ELSE in_bytes END AS rank_size
  FROM windowed
),
calls AS (
  SELECT step, pg, collective, seq, any_value(status) AS status, count(*) AS ranks,
         coalesce(max(group_size), count(*)) AS n, max(rank_size) AS size_bytes, min(dur) AS latency_ns,
         max(link_gbps) AS link_gbps, min(t0) AS first_t0, max(t0) - min(t0) AS start_skew_ns,
         max(t1) - min(t1) AS end_skew_ns, sum(last_t0 - t0) AS wait_ns,
         arg_min(rank, [t0, rank]) AS first_rank, arg_max(rank, [t0, -rank]) AS last_rank,
         coalesce(max(split_imbalance),
                  CASE WHEN count(in_bytes) > 1 AND avg(in_bytes) > 0 THEN max(in_bytes) / avg(in_bytes) END)
           AS imbalance,
         2 * max(band_us) AS band_us, bool_and(skew_readable) AS skew_readable, bool_and(calls_match) AS calls_match
  FROM sized GROUP BY step, pg, collective, seq
),
measured AS (
  SELECT *, status = 'ok' AND calls_match AS matched, status = 'ok' AND calls_match AND skew_readable AS trusted,
         CASE collective WHEN 'all_reduce' THEN 2.0 * (n - 1) / n
                         WHEN 'all_gather' THEN (n - 1) / n WHEN 'reduce_scatter' THEN (n - 1) / n
                         WHEN 'all_to_all' THEN (n - 1) / n
                         WHEN 'broadcast' THEN 1.0 WHEN 'reduce' THEN 1.0 WHEN 'send_recv' THEN 1.0 END AS bus_factor,
         CASE WHEN latency_ns > 0 THEN size_bytes / latency_ns END AS algbw_gbps  -- bytes / ns = GB/s
  FROM calls
)
SELECT step, pg, collective, seq, status, ranks, n AS group_size,
       CAST(size_bytes AS DOUBLE) AS size_bytes,
       CASE WHEN matched THEN latency_ns / 1e3 END AS latency_us,
       CASE WHEN matched THEN algbw_gbps END AS algbw_gbps,
       CASE WHEN matched THEN algbw_gbps * bus_factor END AS busbw_gbps,
       CAST(link_gbps AS DOUBLE) AS link_gbps,
       CASE WHEN matched AND link_gbps > 0 THEN 100.0 * algbw_gbps * bus_factor / link_gbps END AS pct_of_link,
       CASE WHEN trusted THEN start_skew_ns / 1e3 END AS start_skew_us,
       CASE WHEN trusted THEN end_skew_ns / 1e3 END AS end_skew_us,
       CASE WHEN trusted THEN wait_ns / 1e3 END AS wait_us,
       CASE WHEN trusted THEN first_rank END AS first_rank,
       CASE WHEN trusted THEN last_rank END AS last_rank,
       CAST(imbalance AS DOUBLE) AS imbalance,
       band_us,
       CASE WHEN trusted AND latency_ns > 0 THEN start_skew_ns / latency_ns END AS skew_to_transfer,
       trusted AND bus_factor IS NOT NULL AND collective <> 'broadcast' AND collective <> 'reduce'
         AND collective <> 'send_recv' AND end_skew_ns / 1e3 > band_us AS ends_apart
FROM measured
ORDER BY first_t0, step, pg, collective, seq;
