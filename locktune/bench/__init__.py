"""The lock benchmark behind `locktune bench locks`.

- `lockbench`: runs the C program ``locktune-lockbench`` once and checks what it prints;
- `sweeps`: the configurations the issues ask for (uncontended cost, oversubscription, shared
  lines, the RCL delay sweep, a thread sweep for larger machines);
- `runner`: runs them interleaved in shuffled order, repeated, and takes ratios to glibc's
  pthread_mutex within each round;
- `report`: JSON, SVG charts and the tables people read.
"""
