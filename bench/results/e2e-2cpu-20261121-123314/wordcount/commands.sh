#!/bin/sh
# The commands that made this folder, in order.
set -e
(cd /tmp/locktune-e2e-gjt_0kb2/wordcount/original && bear -- make)
(cd /tmp/locktune-e2e-gjt_0kb2/wordcount/original && locktune profile -o /tmp/locktune-e2e-gjt_0kb2/wordcount/profile.json --source-root /tmp/locktune-e2e-gjt_0kb2/wordcount/original -- ./wordcount -t 8)
locktune report /tmp/locktune-e2e-gjt_0kb2/wordcount/profile.json --top 10 --html /tmp/locktune-e2e-gjt_0kb2/wordcount/report.html
locktune rewrite --compile-commands /tmp/locktune-e2e-gjt_0kb2/wordcount/original/compile_commands.json --profile /tmp/locktune-e2e-gjt_0kb2/wordcount/profile.json --out /tmp/locktune-e2e-gjt_0kb2/wordcount/rewritten --report /tmp/locktune-e2e-gjt_0kb2/wordcount/rewrite.json /tmp/locktune-e2e-gjt_0kb2/wordcount/original
(cd /tmp/locktune-e2e-gjt_0kb2/wordcount/rewritten && make clean)
(cd /tmp/locktune-e2e-gjt_0kb2/wordcount/rewritten && make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")
locktune bench compare /tmp/locktune-e2e-gjt_0kb2/wordcount/original /tmp/locktune-e2e-gjt_0kb2/wordcount/rewritten --no-build --out /tmp/locktune-e2e-gjt_0kb2/wordcount/compare --threads 2,8,32 --repeats 3 --timeout 20.0 --check '^result:' --site hot --algos posix,shfl-block,ccsynch,rcl -- ./wordcount -t '{threads}'
