"""Loop C, learning: REINFORCE shifting probabilities, from a few exact actions up to a language model.

``policy_gradient`` (the exact maths of a softmax policy), ``bandit`` and ``two_step`` (the
microscopes), ``kl_estimators``, ``loss_normalisation`` and ``kl_tradeoff`` (the objective's
microscopes), ``narration`` and ``bandit_story`` (the stories they print), ``demo_plots`` (their
figures), Loop C in four files read in order: ``rl_config`` (its settings), ``rl_objective`` (its loss),
``rl_loop`` (the one RL loop every real policy trains with) and ``rl_run`` (its runs), and
``reference_curves`` (the bands a rerun of it must learn within).
"""
