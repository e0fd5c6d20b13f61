"""The profiler's Python half: read the raw files liblocktune-prof.so leaves behind, resolve
their addresses to lock sites (file:line) through the debug information, compute the
profile (schema ``locktune-profile/1``), recommend an algorithm per site, and render reports.

    raw.py        the raw file format (profiler/src/layout.h), read-only
    symbols.py    addresses -> file:line, function, variable (addr2line, DWARF via pyelftools)
    analyze.py    raw files -> profile.json
    recommend.py  thresholds (defaults, `locktune calibrate`) and the per-site rules
    render.py     the report as a table, JSON and a self-contained HTML page
"""
