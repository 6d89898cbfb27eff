"""Tools behind the bench, sweep and check commands (their only importers); may import the
library."""
