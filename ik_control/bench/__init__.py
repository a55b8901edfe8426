"""Benchmarks behind ``ik_control bench``: each prints figures and compares peers in one run."""
