// Package inproc is the in-process queue adapter: a bounded queue in memory
// between the POST handler and the persister, with the same at-least-once
// contract as a broker (deliveries stay counted until acknowledged, and a
// nack hands them back). Rides in it are lost if the process dies, which is
// why production runs a broker; on SIGTERM the persister drains it first.
package inproc
