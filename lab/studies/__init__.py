"""Studies: steps made of the others (calibrate, storm, cost, profile, probe table, reproduce,
claims runs, noise).
"""
