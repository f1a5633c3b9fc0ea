"""Loop C, learning: REINFORCE shifting probabilities, from a few exact actions up to a language model.

``policy_gradient`` (the exact maths of a softmax policy), ``bandit`` and ``two_step`` (the
microscopes), ``narration`` (the stories they print), ``demo_plots`` (their figures) and
``rl_loop`` (the one RL loop every real policy trains with).
"""
