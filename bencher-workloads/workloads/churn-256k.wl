# churn-256k: an object store at steady state that keeps replacing its objects. Fill with
# 20,000 x 256 KiB (5 GiB), then 60,000 operations in a seeded random order: puts of new
# objects, reads of random ones, deletes of random ones and of old ones (the oldest 10%),
# so the live set stays near 5 GiB while the free space fragments. About 11 GiB written.
Seed: 11;
Command {
  20000.times {
    New(256K);
  };
}
Unordered[60000] {
  <40%> New(256K);
  <20%> Get;
  <25%> Delete;
  <15%> Delete(0, 10);
}
