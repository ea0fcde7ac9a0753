# overwrite-heavy-1m: updates in place. Fill with 4,000 x 1 MiB, then 30,000 operations in
# a seeded random order, mostly overwrites of live objects (some of which grow to 2 MiB),
# reads, and rewrite-then-read pairs. Cannyls writes each new version elsewhere and frees
# the old one, so this measures allocation under churn at a fixed object count.
# About 27 GiB written; about 4.5 GiB live.
Seed: 23;
Command {
  4000.times {
    New(1M);
  };
}
Unordered[30000] {
  <45%> OverWrite(1M);
  <10%> OverWrite(2M);
  <30%> Get;
  <15%> {
    OverWrite(1M);
    Get;
  };
}
