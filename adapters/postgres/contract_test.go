package postgres

import (
	"testing"

	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/storetest"
)

func TestRideStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ports.RideStore {
		return openTestDB(t, Config{MaxConns: 4}).Rides()
	}, storetest.Options{Rides: 20000})
}

func TestResortStoreContract(t *testing.T) {
	storetest.RunResorts(t, func(t *testing.T) ports.ResortStore {
		return openTestDB(t, Config{MaxConns: 2}).Resorts()
	})
}
