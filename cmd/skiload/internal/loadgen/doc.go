// Package loadgen is the load client behind cmd/skiload: it generates
// random lift rides, POSTs them to the Ski Data API in two phases of
// workers (the classic "32 threads warm up, then the rest pile in" shape),
// retries what the service asks it to retry, and reports throughput and
// latency. It can also drive the three GET test cases, measure the
// machine's ceiling against a trivial in-process server (--baseline), and
// check afterwards that every ride answered 201 reached the store
// (--verify).
//
// It sits outside the hexagon: it talks to the service only over HTTP, as
// any client would, and imports nothing of the service's packages, so it
// measures the real wire path and can run against any deployment.
//
// Why cmd/skiload/internal/loadgen and not a top-level package: the code is
// a tool's engine, not part of the service's vocabulary (domain, ports, app,
// adapters, the repository's binding top level), and nothing but skiload
// should build on it; internal/ under the command makes both facts visible
// and enforced by the compiler, while keeping cmd/skiload a thin main
// (flags, signals, exit code) and the logic unit testable.
package loadgen
