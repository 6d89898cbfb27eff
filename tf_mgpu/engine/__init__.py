"""The training engine. May import config, errors, cluster, TF; not outputs, tools or commands."""
