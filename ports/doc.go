// Package ports declares the interfaces between skidata's core and the
// outside world.
//
// Driven ports (store.go, queue.go) are what the core needs: somewhere to keep
// rides and resorts, and a queue between the POST handler and the persister.
// Each has adapters under adapters/ and a contract suite under test/ that
// every adapter must pass.
//
// Driving ports (services.go) are what the core offers: the services the HTTP
// layer calls. Only domain types cross them.
package ports
