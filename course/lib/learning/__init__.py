"""Loop C, learning: REINFORCE shifting probabilities, from a few exact actions up to a language model.

``policy_gradient`` (the exact maths of a softmax policy), ``bandit`` and ``two_step`` (the
microscopes), ``kl_estimators``, ``loss_normalisation`` and ``kl_tradeoff`` (the objective's
microscopes), ``narration`` and ``bandit_story`` (the stories they print), ``demo_plots`` (their
figures), ``rl_loop`` (the one RL loop every real policy trains with) and ``reference_curves`` (the
bands a rerun of it must learn within).
"""
