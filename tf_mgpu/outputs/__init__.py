"""What a run writes and shows. May import config, errors, engine; not tasks, tools or commands."""
