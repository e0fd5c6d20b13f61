#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e-auto-work/wordcount/original && bear -- make)
(cd /tmp/e2e-auto-work/wordcount/original && locktune profile -o /tmp/e2e-auto-work/wordcount/profile.json --source-root /tmp/e2e-auto-work/wordcount/original -- ./wordcount -t 8)
locktune report /tmp/e2e-auto-work/wordcount/profile.json --top 10 --html /tmp/e2e-auto-work/wordcount/report.html
locktune rewrite --compile-commands /tmp/e2e-auto-work/wordcount/original/compile_commands.json --profile /tmp/e2e-auto-work/wordcount/profile.json --out /tmp/e2e-auto-work/wordcount/rewritten --report /tmp/e2e-auto-work/wordcount/rewrite.json /tmp/e2e-auto-work/wordcount/original
(cd /tmp/e2e-auto-work/wordcount/rewritten && make clean)
(cd /tmp/e2e-auto-work/wordcount/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e-auto-work/wordcount/original /tmp/e2e-auto-work/wordcount/rewritten --no-build --out /tmp/e2e-auto-work/wordcount/compare --threads 1,2,8,32 --repeats 5 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./wordcount -t '{threads}'
