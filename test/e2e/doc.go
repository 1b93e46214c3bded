// Package e2e runs the end-to-end HTTP suite (test/apitest) against the
// service in each of its modes.
package e2e
