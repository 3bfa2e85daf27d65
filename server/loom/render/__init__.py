"""Every output format of the seeds, each produced by one function."""
