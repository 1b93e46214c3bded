// Package memory is the in-process store adapter: rides and resorts kept in
// maps, for running with nothing installed and as the reference the other
// stores are compared with. Everything is lost when the process ends.
package memory
