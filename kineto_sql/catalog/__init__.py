"""The rule catalog, above sql/: a rule's spec from its header, its test cases (.test.toml) and the
generated lock of versions and hashes."""
