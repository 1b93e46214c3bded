// Command skibench loads one deterministic data set into each store through
// the RideStore port, runs one query mix against each, checks their answers
// against the memory store's, and reports throughput, DynamoDB units, cost
// and ceilings, and latency; `skibench plan` and `skibench chart` answer a
// resort's traffic from a saved run (package bench; README "skibench").
package main
