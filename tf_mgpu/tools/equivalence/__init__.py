"""The equivalence check behind `python -m tf_mgpu.check`; imported only by that command."""
