"""The mutation check behind `python -m tests.mutate`: each guarded behaviour, broken
on purpose in a copy of the repository, must make its test fail. Imports no TensorFlow."""
