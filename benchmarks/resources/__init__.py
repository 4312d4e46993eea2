"""Objectives and functions created in a loop: the threads, memory and cache files a long search leaves.

``python -m benchmarks.resources`` runs it (:mod:`benchmarks.resources.suite`) and prints what it measured.
"""
