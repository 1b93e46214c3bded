package app

import (
	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/ports"
)

// memorySet keeps rides and resorts in this process.
var memorySet = wire.NewSet(
	memory.NewRideStore, wire.Bind(new(ports.RideStore), new(*memory.RideStore)),
	memory.NewResortStore, wire.Bind(new(ports.ResortStore), new(*memory.ResortStore)),
	memoryProbe,
)

// memoryProbe: a store in this process has nothing to reach.
func memoryProbe() StoreProbe { return StoreProbe{} }
