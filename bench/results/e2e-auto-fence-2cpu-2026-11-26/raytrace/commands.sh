#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/locktune-e2e-j7c3jbk9/raytrace/original && bear -- make)
(cd /tmp/locktune-e2e-j7c3jbk9/raytrace/original && locktune profile -o /tmp/locktune-e2e-j7c3jbk9/raytrace/profile.json --source-root /tmp/locktune-e2e-j7c3jbk9/raytrace/original -- ./raytrace -t 8)
locktune report /tmp/locktune-e2e-j7c3jbk9/raytrace/profile.json --top 10 --html /tmp/locktune-e2e-j7c3jbk9/raytrace/report.html
locktune rewrite --compile-commands /tmp/locktune-e2e-j7c3jbk9/raytrace/original/compile_commands.json --profile /tmp/locktune-e2e-j7c3jbk9/raytrace/profile.json --out /tmp/locktune-e2e-j7c3jbk9/raytrace/rewritten --report /tmp/locktune-e2e-j7c3jbk9/raytrace/rewrite.json /tmp/locktune-e2e-j7c3jbk9/raytrace/original
(cd /tmp/locktune-e2e-j7c3jbk9/raytrace/rewritten && make clean)
(cd /tmp/locktune-e2e-j7c3jbk9/raytrace/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/locktune-e2e-j7c3jbk9/raytrace/original /tmp/locktune-e2e-j7c3jbk9/raytrace/rewritten --no-build --out /tmp/locktune-e2e-j7c3jbk9/raytrace/compare --threads 1,2,8,32 --repeats 10 --timeout 60 --check '^result:' --site hot --algos posix,shfl-block,auto -- ./raytrace -t '{threads}'
