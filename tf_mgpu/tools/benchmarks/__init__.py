"""The benchmark behind `python -m tf_mgpu.bench`; imported only by that command."""
