package memory_test

import (
	"testing"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/storetest"
)

func TestRideStoreContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) ports.RideStore { return memory.NewRideStore() }, storetest.Options{Rides: 20000})
}

func TestResortStoreContract(t *testing.T) {
	storetest.RunResorts(t, func(*testing.T) ports.ResortStore { return memory.NewResortStore() })
}
