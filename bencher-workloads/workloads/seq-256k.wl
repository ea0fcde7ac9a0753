# seq-256k: sequential write of 256 KiB objects, about 25 GiB in all (100,000 puts).
# Reference workload (docs/WORKLOADS.md): Cannyls on minfs vs ext4 (journal off) and XFS
# on a 1 TB 7200 rpm 512e HDD. Models a bulk load of mid-sized objects.
Command {
  100000.times {
    New(256K);
  };
}
