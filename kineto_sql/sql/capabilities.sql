-- What the runner asks before running a query with `needs:`: the trace's capabilities.
INCLUDE PERFETTO MODULE kineto.lib.capabilities;
SELECT name, present, detail FROM kineto_capabilities;
