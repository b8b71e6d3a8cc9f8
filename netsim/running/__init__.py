"""Run layer: the runs of a scenario and of a sweep: the round loop, its callbacks and files."""
