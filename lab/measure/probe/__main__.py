"""`python3 -m lab.measure.probe SERVER...`: see lab.measure.probe.main."""
import sys

from lab.measure.probe import main

sys.exit(main(sys.argv[1:]))
