#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e1-work/wordcount/original && bear -- make)
(cd /tmp/e2e1-work/wordcount/original && locktune profile -o /tmp/e2e1-work/wordcount/profile.json --source-root /tmp/e2e1-work/wordcount/original -- ./wordcount -t 8)
locktune report /tmp/e2e1-work/wordcount/profile.json --top 10 --html /tmp/e2e1-work/wordcount/report.html
locktune rewrite --compile-commands /tmp/e2e1-work/wordcount/original/compile_commands.json --profile /tmp/e2e1-work/wordcount/profile.json --out /tmp/e2e1-work/wordcount/rewritten --report /tmp/e2e1-work/wordcount/rewrite.json /tmp/e2e1-work/wordcount/original
(cd /tmp/e2e1-work/wordcount/rewritten && make clean)
(cd /tmp/e2e1-work/wordcount/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e1-work/wordcount/original /tmp/e2e1-work/wordcount/rewritten --no-build --out /tmp/e2e1-work/wordcount/compare --threads 1 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./wordcount -t '{threads}'
