"""Studies: steps made of the others (calibrate, storm, cost, profile, reproduce,
claims runs, noise).
"""
