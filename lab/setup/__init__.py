"""Setup: the settings registry, the server manifests, the pinned sources, paths and exit codes.

What every other package reads; imports nothing of the lab's own.
"""
