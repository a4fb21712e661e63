"""Record: the run folder and every file in it (manifest.json, results.csv,
results.json, series), its atomic writes and its lock.

Imports setup and host only.
"""
