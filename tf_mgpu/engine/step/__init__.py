"""Steps and loops: one replica's step, the compiled calls that run it, and the Trainer."""
