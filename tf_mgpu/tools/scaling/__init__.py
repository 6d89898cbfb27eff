"""The scaling sweep behind `python -m tf_mgpu.sweep`; imported only by that command."""
