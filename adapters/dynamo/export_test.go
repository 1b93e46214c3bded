package dynamo

// MarkerShardOf is the marker shard of a skier, for tests that need
// skiers on one shard.
var MarkerShardOf = markerShard
