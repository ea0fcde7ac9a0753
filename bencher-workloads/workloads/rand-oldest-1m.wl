# rand-oldest-1m: fill with 5,000 x 1 MiB, then repeat: put 1 MiB, get one object chosen
# from the oldest 1%-5% of the live objects (the head moves back and forth across the disk).
# Reference workload (docs/WORKLOADS.md). Models reads of cold data interleaved with
# appends, the worst case for seeks.
Command {
  5000.times {
    New(1M);
  };
  10000.times {
    New(1M);
    Get(1, 5);
  };
}
