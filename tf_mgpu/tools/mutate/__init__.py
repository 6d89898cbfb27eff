"""The mutation check behind `python -m tf_mgpu.tools.mutate`: each guarded behaviour, broken
on purpose in a copy of the repository, must make its test fail. Imports no TensorFlow."""
