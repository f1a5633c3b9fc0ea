"""Seeing runs: the pages and pictures made from run directories, never changing a run.

``run_kinds`` (each kind of run directory once: its tools and its title), ``html`` (one
self-contained HTML page for one or several runs), ``svg`` (charts as inline SVG,
standard library only) and ``plotting`` (the one place matplotlib is touched).
"""
