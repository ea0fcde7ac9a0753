# churn-sync-256k: churn-256k's object store that also makes its changes durable: fill with
# 2,000 x 256 KiB (500 MiB) and sync, then 6,000 operations in a seeded random order: puts of
# new objects, reads, deletes of random ones and of old ones (the oldest 10%), and a
# journal_sync about every seventh operation. For power-cut tests (scripts/powercut.sh):
# deletes that a sync acknowledged must stay deleted, puts that one acknowledged must stay.
Seed: 11;
Command {
  2000.times {
    New(256K);
  };
  Sync;
}
Unordered[6000] {
  <35%> New(256K);
  <15%> Get;
  <22%> Delete;
  <13%> Delete(0, 10);
  <15%> Sync;
}
