"""Input: a task's splits, checked and served to each replica and worker.

In memory, read by index, or as tf.data; the per-example checks live here too.
"""
