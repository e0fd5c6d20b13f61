#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/locktune-e2e-j7c3jbk9/wordcount/original && bear -- make)
(cd /tmp/locktune-e2e-j7c3jbk9/wordcount/original && locktune profile -o /tmp/locktune-e2e-j7c3jbk9/wordcount/profile.json --source-root /tmp/locktune-e2e-j7c3jbk9/wordcount/original -- ./wordcount -t 8)
locktune report /tmp/locktune-e2e-j7c3jbk9/wordcount/profile.json --top 10 --html /tmp/locktune-e2e-j7c3jbk9/wordcount/report.html
locktune rewrite --compile-commands /tmp/locktune-e2e-j7c3jbk9/wordcount/original/compile_commands.json --profile /tmp/locktune-e2e-j7c3jbk9/wordcount/profile.json --out /tmp/locktune-e2e-j7c3jbk9/wordcount/rewritten --report /tmp/locktune-e2e-j7c3jbk9/wordcount/rewrite.json /tmp/locktune-e2e-j7c3jbk9/wordcount/original
(cd /tmp/locktune-e2e-j7c3jbk9/wordcount/rewritten && make clean)
(cd /tmp/locktune-e2e-j7c3jbk9/wordcount/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/locktune-e2e-j7c3jbk9/wordcount/original /tmp/locktune-e2e-j7c3jbk9/wordcount/rewritten --no-build --out /tmp/locktune-e2e-j7c3jbk9/wordcount/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./wordcount -t '{threads}'
