"""Tools for rule authors, the top of the rule stack: lint, the rule page (`show`), scaffolding (`new`),
`try` over many traces, paste bundles for the Perfetto UI, and a rule's own tests run (`test`: the tiny-trace
builder and the judge of its cases)."""
