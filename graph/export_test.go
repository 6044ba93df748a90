package graph

// MaxWriters is maxWriters, for tests that outnumber the writers.
var MaxWriters = maxWriters
