#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e11w/bank/original && bear -- make)
(cd /tmp/e2e11w/bank/original && locktune profile -o /tmp/e2e11w/bank/profile.json --source-root /tmp/e2e11w/bank/original -- ./bank 8 400000)
locktune report /tmp/e2e11w/bank/profile.json --top 10 --html /tmp/e2e11w/bank/report.html
locktune rewrite --compile-commands /tmp/e2e11w/bank/original/compile_commands.json --profile /tmp/e2e11w/bank/profile.json --out /tmp/e2e11w/bank/rewritten --report /tmp/e2e11w/bank/rewrite.json /tmp/e2e11w/bank/original
(cd /tmp/e2e11w/bank/rewritten && make clean)
(cd /tmp/e2e11w/bank/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e11w/bank/original /tmp/e2e11w/bank/rewritten --no-build --out /tmp/e2e11w/bank/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^total ' --site hot --algos posix,shfl-block,auto -- ./bank '{threads}' 400000
