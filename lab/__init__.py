"""The lab's own code: manifests, verification, sweeps, results, charts.

The package spans every `lab` folder on sys.path (pkgutil.extend_path), so
that a client or a topology kept outside the checkout (a folder on
PYTHONPATH holding lab/measure/clients/x.py or lab/measure/topologies/x.py) is found as if it
were here: docs/extending.md.
"""
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
