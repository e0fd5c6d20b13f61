#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e1-work/kvcache/original && bear -- make)
(cd /tmp/e2e1-work/kvcache/original && locktune profile -o /tmp/e2e1-work/kvcache/profile.json --source-root /tmp/e2e1-work/kvcache/original -- ./kvcache -t 8)
locktune report /tmp/e2e1-work/kvcache/profile.json --top 10 --html /tmp/e2e1-work/kvcache/report.html
locktune rewrite --compile-commands /tmp/e2e1-work/kvcache/original/compile_commands.json --profile /tmp/e2e1-work/kvcache/profile.json --out /tmp/e2e1-work/kvcache/rewritten --report /tmp/e2e1-work/kvcache/rewrite.json /tmp/e2e1-work/kvcache/original
(cd /tmp/e2e1-work/kvcache/rewritten && make clean)
(cd /tmp/e2e1-work/kvcache/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e1-work/kvcache/original /tmp/e2e1-work/kvcache/rewritten --no-build --out /tmp/e2e1-work/kvcache/compare --threads 1 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./kvcache -t '{threads}'
