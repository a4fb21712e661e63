"""Host: the processes the lab starts and watches (procs, the keeper, /proc readers).

Imports only setup.
"""
