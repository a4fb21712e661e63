"""Measure: build, verify, warm up and sweep a server with a client, in a topology.

Nothing that analyses or presents a run imports this package.
"""
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
