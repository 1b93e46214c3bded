// Package cachetest is the contract suite for ports.Cache: every cache
// adapter's _test.go calls Run with a factory that returns a fresh, isolated
// cache (its own key prefix) for each test. The query service relies on what
// it checks: a miss is not an error, an empty value is a hit, Delete removes
// exactly the keys given, and entries expire after their TTL.
package cachetest
