# durable-256k: every 256 KiB put made durable before the next (like a database with
# sync=true): 20,000 x (put, journal_sync), about 5 GiB.
# Reference workload (docs/WORKLOADS.md). Measures what durability costs where a
# filesystem's own metadata must reach the disk at every sync.
Command {
  20000.times {
    New(256K);
    Sync;
  };
}
