"""Data-parallel MNIST training with tf.distribute: one device, many GPUs, many machines."""
