#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/e2e11w/raytrace/original && bear -- make)
(cd /tmp/e2e11w/raytrace/original && locktune profile -o /tmp/e2e11w/raytrace/profile.json --source-root /tmp/e2e11w/raytrace/original -- ./raytrace -t 8)
locktune report /tmp/e2e11w/raytrace/profile.json --top 10 --html /tmp/e2e11w/raytrace/report.html
locktune rewrite --compile-commands /tmp/e2e11w/raytrace/original/compile_commands.json --profile /tmp/e2e11w/raytrace/profile.json --out /tmp/e2e11w/raytrace/rewritten --report /tmp/e2e11w/raytrace/rewrite.json /tmp/e2e11w/raytrace/original
(cd /tmp/e2e11w/raytrace/rewritten && make clean)
(cd /tmp/e2e11w/raytrace/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/e2e11w/raytrace/original /tmp/e2e11w/raytrace/rewritten --no-build --out /tmp/e2e11w/raytrace/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./raytrace -t '{threads}'
