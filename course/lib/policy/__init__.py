"""What every policy shares, whichever model it wraps (the tiny LM, the real LLM).

``templates`` (how an item is put to a policy), ``report`` (a learning run's report lines and
curves), ``problems`` (the training problem stream and the bundled datasets it excludes).
"""
