"""Faults: signals that stop a run and the liveness a supervisor reads."""
