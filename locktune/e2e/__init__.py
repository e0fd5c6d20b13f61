"""The pipeline end to end, as a user runs it: profile, report, rewrite, build, compare.

- `apps`: how to run the bundled legacy-style apps (testsuite/apps/) at a thread count;
- `pipeline`: the steps, each one the `locktune` command (or make) a user would type, logged
  into one output folder; scripts/demo.py and scripts/bench_e2e.py run them.
"""
