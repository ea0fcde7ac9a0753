# rand-mixed-1m: fill with 5,000 x 1 MiB, then 40,000 operations, half puts, half gets of a
# uniformly chosen live object, in a seeded random order.
# Reference workload (docs/WORKLOADS.md). Models a steady read/write object-store load
# where reads hit anywhere on the disk.
Command {
  5000.times {
    New(1M);
  };
}
Unordered[40000] {
  <50%> New(1M);
  <50%> Get;
}
