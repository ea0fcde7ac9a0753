# delete-range-sweep: a log-structured store that expires its oldest data in bulk. Fill with
# 8,000 x 512 KiB (4 GiB), then 40 rounds of: 400 new puts, one delete_range over the
# oldest 10% of the live objects, a journal_sync. Then a read pass in order: 2,000 reads
# from the older half of what is left, then 2,000 from the newer half. About 12 GiB written.
Seed: 3;
Command {
  8000.times {
    New(512K);
  };
}
Command {
  40.times {
    400.times {
      New(512K);
    };
    DeleteRange(0, 10);
    Sync;
  };
}
Ordered[4000] {
  <50%> Get(0, 50);
  <50%> Get(50, 100);
}
