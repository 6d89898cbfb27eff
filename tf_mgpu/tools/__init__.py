"""Tools behind the bench and sweep commands (their only importers); may import the library."""
