"""Tools for rule authors, the top of the rule stack: lint, the rule page (`show`), scaffolding (`new`),
`try` over many traces and paste bundles for the Perfetto UI."""
