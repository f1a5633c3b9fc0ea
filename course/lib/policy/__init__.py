"""What every policy shares, whichever model it wraps (the tiny LM, the real LLM).

``sampling`` (sampling from logits: the draw, top-p, batching, threads), ``rollout_records`` (the
rollout and selection-pack record), ``progress`` (the progress line), ``templates`` (how an item is
put to a policy) and ``training_problems`` (the training problem stream and the bundled datasets it
excludes). A learning run's report lines and curves are ``course.lib.reporting.rl_report``.
"""
