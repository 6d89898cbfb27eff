"""Tools behind the bench, sweep and check commands (their only importers), and the generator
of docs/reference.md; may import the library."""
