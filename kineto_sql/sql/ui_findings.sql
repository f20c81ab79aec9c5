-- The SQL `kineto-sql open --finding` runs in the UI, split on the `-- section:` lines.
-- store: the detector's final SELECT is appended to it as is.
-- track: a debug slice track must be one SELECT with ts, dur and name; the name is the evidence sentence.
-- tab: every row as the detector returned it.

-- section: store
CREATE OR REPLACE PERFETTO TABLE kineto_finding AS

-- section: track
SELECT ts, coalesce(dur, 0) AS dur, coalesce(nullif(evidence, ''), 'finding') AS name FROM kineto_finding WHERE ts IS NOT NULL

-- section: tab
SELECT * FROM kineto_finding
