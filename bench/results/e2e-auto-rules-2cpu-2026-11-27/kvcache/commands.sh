#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e11w/kvcache/original && bear -- make)
(cd /tmp/e2e11w/kvcache/original && locktune profile -o /tmp/e2e11w/kvcache/profile.json --source-root /tmp/e2e11w/kvcache/original -- ./kvcache -t 8)
locktune report /tmp/e2e11w/kvcache/profile.json --top 10 --html /tmp/e2e11w/kvcache/report.html
locktune rewrite --compile-commands /tmp/e2e11w/kvcache/original/compile_commands.json --profile /tmp/e2e11w/kvcache/profile.json --out /tmp/e2e11w/kvcache/rewritten --report /tmp/e2e11w/kvcache/rewrite.json /tmp/e2e11w/kvcache/original
(cd /tmp/e2e11w/kvcache/rewritten && make clean)
(cd /tmp/e2e11w/kvcache/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e11w/kvcache/original /tmp/e2e11w/kvcache/rewritten --no-build --out /tmp/e2e11w/kvcache/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./kvcache -t '{threads}'
