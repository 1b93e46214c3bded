// Package e2e runs the end-to-end HTTP suite (test/apitest) against the
// service in each of its modes.
//
// The long tests that run skiapi as processes (the cluster, kill -9,
// outage and role tests) run in parallel with one another: each has its
// own processes, queue prefix and schema, and spends most of its time
// waiting on them. The others, which set environment variables or time
// the service closely, run one at a time before them.
package e2e
