"""The cluster: TF_CONFIG, Slurm, local workers. Imports config and errors only; no TF at import."""
