"""MNIST for the built-in tasks: TFDS loading, the offline checks, and the uint8 serving model."""
