// Package prom is the Prometheus ports.Metrics: it turns the events the core
// emits into series on its own registry (not the global one, so several
// services can live in one test binary) and serves them at /metrics in the
// text exposition format. app never imports it; the injector hands it to the
// core as a ports.Metrics and mounts Handler next to the API.
package prom
