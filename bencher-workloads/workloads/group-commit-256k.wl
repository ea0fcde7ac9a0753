# group-commit-256k: group commit, one journal_sync per 32 puts of 256 KiB:
# 625 x (32 puts, Sync) = 20,000 puts, about 5 GiB.
# Reference workload (docs/WORKLOADS.md). The batched counterpart of durable-256k.
Command {
  625.times {
    32.times {
      New(256K);
    };
    Sync;
  };
}
