"""The task and its reward as a spec: what is asked, and the suites that say what the scorer must pay.

``problems`` (the course's problems, one integer answer each), ``tokens`` (a completion as tokens
beside its verdict), ``exploit_suites`` (golden suites and the red team), ``kata_labels`` and
``kata_drafts`` (the debugging kata: its packs and labels, and the draft verifiers it debugs).
"""
