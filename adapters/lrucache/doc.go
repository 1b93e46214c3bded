// Package lrucache is the in-process ports.Cache: a bounded LRU
// (hashicorp/golang-lru/v2) whose entries carry their own expiry. The query
// service reads through it (--cache memory); it is private to one process, so
// with several API processes each keeps its own copy and only the persister
// in the same process invalidates it — the TTL bounds staleness elsewhere.
//
// Why not golang-lru's expirable LRU: it runs a cleanup goroutine that cannot
// be stopped and has one TTL for the whole cache. Here an expired entry is
// dropped when it is read, and the LRU bound evicts the rest.
package lrucache
