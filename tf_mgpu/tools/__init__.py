"""Tools behind the bench and sweep commands (their only importers), and the mutation check
(`python -m tf_mgpu.tools.mutate`, for the repository's own tests); may import the library."""
