#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e1-work/raytrace/original && bear -- make)
(cd /tmp/e2e1-work/raytrace/original && locktune profile -o /tmp/e2e1-work/raytrace/profile.json --source-root /tmp/e2e1-work/raytrace/original -- ./raytrace -t 8)
locktune report /tmp/e2e1-work/raytrace/profile.json --top 10 --html /tmp/e2e1-work/raytrace/report.html
locktune rewrite --compile-commands /tmp/e2e1-work/raytrace/original/compile_commands.json --profile /tmp/e2e1-work/raytrace/profile.json --out /tmp/e2e1-work/raytrace/rewritten --report /tmp/e2e1-work/raytrace/rewrite.json /tmp/e2e1-work/raytrace/original
(cd /tmp/e2e1-work/raytrace/rewritten && make clean)
(cd /tmp/e2e1-work/raytrace/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e1-work/raytrace/original /tmp/e2e1-work/raytrace/rewritten --no-build --out /tmp/e2e1-work/raytrace/compare --threads 1 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./raytrace -t '{threads}'
