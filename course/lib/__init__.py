"""The library layer: pure logic shared by the tools (no argparse, no sys.exit, no printing)."""
