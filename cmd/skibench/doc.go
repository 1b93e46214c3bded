// Command skibench loads one deterministic data set into each store through
// the RideStore port, runs one query mix against each, checks their answers
// against the memory store's, and reports throughput, DynamoDB cost and
// latency (package bench; README "skibench").
package main
