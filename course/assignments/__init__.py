"""Student workspace: the few functions a student is invited to edit.

Everything else under ``course/`` is the teacher's sealed core. Each module here
holds exactly one clearly marked function, works as shipped, and is checked by a
contract test (``tests/test_assignments.py``) that any correct rewrite must pass.
"""
