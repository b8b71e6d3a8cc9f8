"""Utilities layer: files, threads, memory, random streams, lazy names, for every layer above."""
