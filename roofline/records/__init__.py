"""The results format: the typed result and document, its schema and field rules, reading and merging files."""
