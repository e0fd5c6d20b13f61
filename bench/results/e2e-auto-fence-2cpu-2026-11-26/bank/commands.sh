#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/locktune-e2e-j7c3jbk9/bank/original && bear -- make)
(cd /tmp/locktune-e2e-j7c3jbk9/bank/original && locktune profile -o /tmp/locktune-e2e-j7c3jbk9/bank/profile.json --source-root /tmp/locktune-e2e-j7c3jbk9/bank/original -- ./bank 8 400000)
locktune report /tmp/locktune-e2e-j7c3jbk9/bank/profile.json --top 10 --html /tmp/locktune-e2e-j7c3jbk9/bank/report.html
locktune rewrite --compile-commands /tmp/locktune-e2e-j7c3jbk9/bank/original/compile_commands.json --profile /tmp/locktune-e2e-j7c3jbk9/bank/profile.json --out /tmp/locktune-e2e-j7c3jbk9/bank/rewritten --report /tmp/locktune-e2e-j7c3jbk9/bank/rewrite.json /tmp/locktune-e2e-j7c3jbk9/bank/original
(cd /tmp/locktune-e2e-j7c3jbk9/bank/rewritten && make clean)
(cd /tmp/locktune-e2e-j7c3jbk9/bank/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/locktune-e2e-j7c3jbk9/bank/original /tmp/locktune-e2e-j7c3jbk9/bank/rewritten --no-build --out /tmp/locktune-e2e-j7c3jbk9/bank/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^total ' --site hot --algos posix,shfl-block,auto -- ./bank '{threads}' 400000
