"""The library layer: pure functions and records the tools are built from (no argparse, no printing, no exit)."""
