"""The training state built in the strategy's scope, and its checkpoints."""
