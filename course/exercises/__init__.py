"""Planted-bug exercises: small learning loops that are broken the way real RL code breaks.

Each exercise in ``course.exercises.planted_bugs`` is a short, runnable training
loop with exactly one bug in it. The bug does not crash anything: the run
finishes and prints a tidy log. The exercise is to find, *from the log alone*,
that something is wrong, then to find the line responsible.

    python -m course.exercises.planted_bugs --bug advantage
    python -m course.exercises.planted_bugs --bug kl
    python -m course.exercises.planted_bugs --bug x_axis --log-every 1
    python -m course.exercises.planted_bugs --bug x_axis --log-every 10

The corrected loops are the teacher's (``teacher/planted_bugs_solutions.py``), outside the package.
"""
