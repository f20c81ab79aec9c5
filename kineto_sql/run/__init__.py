"""Running rules, above catalog/ and engine/: one query with its parameters (runner) and many queries over
worker processes (pool)."""
