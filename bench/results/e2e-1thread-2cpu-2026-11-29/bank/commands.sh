#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e1-work/bank/original && bear -- make)
(cd /tmp/e2e1-work/bank/original && locktune profile -o /tmp/e2e1-work/bank/profile.json --source-root /tmp/e2e1-work/bank/original -- ./bank 8 400000)
locktune report /tmp/e2e1-work/bank/profile.json --top 10 --html /tmp/e2e1-work/bank/report.html
locktune rewrite --compile-commands /tmp/e2e1-work/bank/original/compile_commands.json --profile /tmp/e2e1-work/bank/profile.json --out /tmp/e2e1-work/bank/rewritten --report /tmp/e2e1-work/bank/rewrite.json /tmp/e2e1-work/bank/original
(cd /tmp/e2e1-work/bank/rewritten && make clean)
(cd /tmp/e2e1-work/bank/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e1-work/bank/original /tmp/e2e1-work/bank/rewritten --no-build --out /tmp/e2e1-work/bank/compare --threads 1 --repeats 10 --timeout 60 --check '^total ' --site hot --algos posix,shfl-block,auto -- ./bank '{threads}' 400000
