"""Analyse: what a run folder says (metrics, verdicts, claims, reasons, views).

Reads a run; never imports measure, studies or host.
"""
