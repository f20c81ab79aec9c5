"""Before and after: two traces (or a trace and a stored baseline) compared window by window, with
bootstrap intervals, a comparability check and the regression gate."""
