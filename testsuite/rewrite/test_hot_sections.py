"""`locktune rewrite --profile` says which critical sections carry a site's time (issue 13,
"per critical section"): a real profile of a program whose one lock is taken in a hot and
a cold section; the profile's callsites are joined to the sections by the lock call's line,
and the header's comment and the summary name the hot section first."""

from __future__ import annotations

import json
import re
import subprocess

HOTCOLD = """\
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long n;

void hot(void)
{
    pthread_mutex_lock(&lock);
    for (long i = 0; i < 20000; i++)
        n += i;
    pthread_mutex_unlock(&lock);
}

void cold(void)
{
    pthread_mutex_lock(&lock);
    n++;
    pthread_mutex_unlock(&lock);
}

int main(void)
{
    for (int i = 0; i < 300; i++) {
        hot();
        cold();
    }
    printf("%ld\\n", n);
    return 0;
}
"""
HOT_LINE, COLD_LINE = 9, 17


def test_header_and_summary_name_the_hot_section(run_locktune, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text(HOTCOLD)
    exe = tmp_path / "hotcold"
    subprocess.run(["cc", "-O1", "-g", "-pthread", "-o", str(exe), str(src / "main.c")], check=True)
    prof = tmp_path / "profile.json"
    res = run_locktune("profile", "-o", str(prof), "--source-root", str(src), "--", str(exe))
    assert res.returncode == 0, res.stderr
    lock = json.loads(prof.read_text())["locks"][0]
    assert [(c["line"], c["function"]) for c in lock["callsites"]] == [
        (HOT_LINE, "hot"),
        (COLD_LINE, "cold"),
    ], lock["callsites"]
    out = tmp_path / "o"
    rep = tmp_path / "rep.json"
    res = run_locktune(
        "rewrite", str(src), "--out", str(out), "--profile", str(prof), "--report", str(rep)
    )
    assert res.returncode == 0, res.stderr
    header = " ".join(re.sub(r"\n\s*\* ?", " ", (out / "locktune_config.h").read_text()).split())
    m = re.search(
        rf"Time by section: main\.c:{HOT_LINE} in hot\(\) \(extracted\) (\d+\.\d)%; "
        rf"main\.c:{COLD_LINE} in cold\(\) \(extracted\) (\d+\.\d)%\.",
        header,
    )
    assert m, header
    assert float(m.group(1)) > 90.0
    assert re.search(
        rf"hot section +main\.c:{HOT_LINE} in hot\(\) \(extracted\): \d+\.\d% of site "
        r"main\.c:4's critical-section time",
        res.stdout,
    ), res.stdout
    hot = json.loads(rep.read_text())["hot_sections"]
    assert [(h["line"], h["status"]) for h in hot] == [
        (HOT_LINE, "extracted"),
        (COLD_LINE, "extracted"),
    ]
