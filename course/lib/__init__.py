"""The library layer: what the tools do, with no command line in it, in folders that are the course's map.

Modules here take and return values and records; they never parse arguments,
print, or exit (the tools in ``course/<tool>.py`` do that). Each folder serves one
part of the course (docs/architecture.md draws the map):

  records/     runs and records, every byte read or written: jsonl, formats, shapes, runs, temporaries, manifest
  external/    what comes from outside: chat_endpoint, dotenv, redaction, dataset_readers, rollout_readers, messages
  reward_spec/ the task and its reward as a spec: problems, tokens, exploit_suites, kata_labels, kata_drafts
  evaluation/  Loop A: pipeline, summary, inspection, locked_room, shards, distribution_shift
  selection/   Loop B: best_of_n, pipeline, policy_comparison, passk_estimators
  learning/    Loop C: policy_gradient, bandit, two_step, kl_estimators, loss_normalisation, kl_tradeoff,
               narration, bandit_story, demo_plots, rl_config, rl_objective, rl_loop, rl_run, reference_curves
  policy/      what every policy shares: sampling, rollout_records, progress, training_problems, templates
  reporting/   seeing runs and every report: views (one module per kind of run), html, page_parts,
               scoring_sections, gate_section, report_files, rl_report, svg, plotting

What every layer uses sits here at the root: ``stats``, ``extras``, ``visible`` and
``toolbox``. ``records.jsonl`` owns every JSON/JSONL byte read or written;
``records.formats`` declares each file format once.
"""

import sys


def not_a_tool(module: str) -> int:
    """What ``python -m <library module>`` does: say it is not a tool and point at the list.

    Asked for ``--help``, that answer is the help (stdout, exit 0); run any other way, it is a
    usage error (stderr, exit 2).
    """
    message = f"{module} is a library module, not a tool (nothing to run). `python -m course` lists the tools."
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        print(message)
        return 0
    print(message, file=sys.stderr)
    return 2
