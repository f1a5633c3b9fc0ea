"""Seeing runs: every page, report and picture made from run directories, never changing a run.

``views`` (one module per kind of run directory: its kind, loader, manifest shape and view; the
tables of run kinds are derived from them), ``html`` (the page frame: one self-contained HTML page
for one or several runs, its styles, script and Content Security Policy), ``page_parts`` (what a run
is to the page, how a view is declared, the small HTML helpers), ``scoring_sections`` (a scoring
run's pass rate, taxonomy and item table), ``gate_section`` (the gate's decision on the page),
``report_files`` (where a page is written and the overwrite rule), ``rl_report`` (a learning run's
stdout report, story line and curves), ``svg`` (charts as inline SVG, standard library only) and
``plotting`` (the one place matplotlib is touched).
"""
