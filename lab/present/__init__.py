"""Present: the run's summary, report.html, index, charts and compare.

Reads a run through record and analyse; never imports measure, studies or host.
"""
