"""The bridge to the user's Keras model: what `compile` set, metrics, outputs, the rate."""
