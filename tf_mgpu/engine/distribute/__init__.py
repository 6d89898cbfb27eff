"""Strategies and collectives: the devices replicas run on, and what workers agree on."""
