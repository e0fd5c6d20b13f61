#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e11w/wordcount/original && bear -- make)
(cd /tmp/e2e11w/wordcount/original && locktune profile -o /tmp/e2e11w/wordcount/profile.json --source-root /tmp/e2e11w/wordcount/original -- ./wordcount -t 8)
locktune report /tmp/e2e11w/wordcount/profile.json --top 10 --html /tmp/e2e11w/wordcount/report.html
locktune rewrite --compile-commands /tmp/e2e11w/wordcount/original/compile_commands.json --profile /tmp/e2e11w/wordcount/profile.json --out /tmp/e2e11w/wordcount/rewritten --report /tmp/e2e11w/wordcount/rewrite.json /tmp/e2e11w/wordcount/original
(cd /tmp/e2e11w/wordcount/rewritten && make clean)
(cd /tmp/e2e11w/wordcount/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e11w/wordcount/original /tmp/e2e11w/wordcount/rewritten --no-build --out /tmp/e2e11w/wordcount/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./wordcount -t '{threads}'
