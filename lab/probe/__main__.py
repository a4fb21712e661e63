"""`python3 -m lab.probe SERVER...`: see lab.probe.main."""
import sys

from lab.probe import main

sys.exit(main(sys.argv[1:]))
