"""The lab's own code: manifests, verification, sweeps, results, charts."""
