"""Setup: the settings registry, the server manifests, the pinned sources, paths,
exit codes and the "reason, or None" type.

What every other package reads; imports nothing of the lab's own.
"""
