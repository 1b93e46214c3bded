// Package bench is skibench: it loads one deterministic data set into each
// store through the ports.RideStore port (the persister's path: batches,
// several writers), runs one query mix against each (the query service's
// path), checks every store's answers against the in-memory reference
// store, and reports throughput, DynamoDB requests and capacity units,
// latency percentiles and stored items as Markdown and JSON. Saved with
// --save, a report feeds `skibench plan` (which model, at what cost a
// month, up to what rate, for a stated traffic: plan.go) and `skibench
// chart` (the lab chart of what decides: labchart.go) with no rerun.
//
// It is the benchmark half of the architecture: cmd/skibench is a thin
// main over Main, and the store wiring (OpenTarget) is the only place that
// knows the adapters; the rest sees ports.RideStore and the small Target
// struct.
package bench
