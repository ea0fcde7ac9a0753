# small-embedded: small objects that Cannyls stores embedded in its journal (no data-region
# I/O for the payload). Fill with 20,000 x 2 KiB, then 50,000 operations in a seeded random
# order: smaller puts, reads of the newest 10% and of the oldest 10% of the live objects,
# deletes, and an occasional journal_sync. About 45 MiB of payload in all.
Seed: 5;
Command {
  20000.times {
    Embed(2K);
  };
}
Unordered[50000] {
  <30%> Embed(512);
  <35%> Get(90, 100);
  <20%> Get(0, 10);
  <10%> Delete;
  <5%> Sync;
}
