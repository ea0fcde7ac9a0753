# seq-4m: sequential write of 4 MiB objects, about 20 GiB (5,000 puts).
# Reference workload (docs/WORKLOADS.md). Models a bulk load of large objects, where the
# disk should stream at its sequential bandwidth.
Command {
  5000.times {
    New(4M);
  };
}
