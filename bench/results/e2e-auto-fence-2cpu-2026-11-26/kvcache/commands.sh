#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/locktune-e2e-j7c3jbk9/kvcache/original && bear -- make)
(cd /tmp/locktune-e2e-j7c3jbk9/kvcache/original && locktune profile -o /tmp/locktune-e2e-j7c3jbk9/kvcache/profile.json --source-root /tmp/locktune-e2e-j7c3jbk9/kvcache/original -- ./kvcache -t 8)
locktune report /tmp/locktune-e2e-j7c3jbk9/kvcache/profile.json --top 10 --html /tmp/locktune-e2e-j7c3jbk9/kvcache/report.html
locktune rewrite --compile-commands /tmp/locktune-e2e-j7c3jbk9/kvcache/original/compile_commands.json --profile /tmp/locktune-e2e-j7c3jbk9/kvcache/profile.json --out /tmp/locktune-e2e-j7c3jbk9/kvcache/rewritten --report /tmp/locktune-e2e-j7c3jbk9/kvcache/rewrite.json /tmp/locktune-e2e-j7c3jbk9/kvcache/original
(cd /tmp/locktune-e2e-j7c3jbk9/kvcache/rewritten && make clean)
(cd /tmp/locktune-e2e-j7c3jbk9/kvcache/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/locktune-e2e-j7c3jbk9/kvcache/original /tmp/locktune-e2e-j7c3jbk9/kvcache/rewritten --no-build --out /tmp/locktune-e2e-j7c3jbk9/kvcache/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./kvcache -t '{threads}'
