package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/dynamotest"
)

// The service on each DynamoDB model, against dynalite. The SDK's default
// credential chain is given dummy keys through the environment, as an
// operator would give real ones.
func TestDynamoInprocEndToEnd(t *testing.T) {
	endpoint := dynamotest.EndpointOrStart(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, model := range dynamo.Models {
		t.Run(model, func(t *testing.T) {
			cfg := compose.DefaultConfig()
			cfg.Listen = "127.0.0.1:0"
			cfg.Store = "dynamo-" + model
			cfg.Dynamo.Region = dynamotest.Region
			cfg.Dynamo.Endpoint = endpoint
			cfg.Dynamo.TablePrefix = dynamotest.Prefix(t)
			createTables(t, cfg)
			apitest.Run(t, apitest.Start(t, cfg))
		})
	}
}

// A burst at one resort through the throughput model, on the adopted model
// whose resort index puts it all on one partition key: every ride is
// stored and counted once, and the throttled writes show in /metrics.
func TestDynamoThrottlesShowInMetrics(t *testing.T) {
	px, err := dynamosim.StartProxy(dynamotest.UpstreamOrStart(t), dynamosim.Options{Throughput: true, WriteUnits: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Store = "dynamo-" + dynamo.ModelAdopted
	cfg.Dynamo.Region = dynamotest.Region
	cfg.Dynamo.Endpoint = px.URL
	cfg.Dynamo.TablePrefix = dynamotest.Prefix(t)
	createTables(t, cfg)
	base := apitest.Start(t, cfg)
	const skiers = 150
	for skier := 1; skier <= skiers; skier++ {
		if r := sendRide(t, base, 1, 2, skier); r.Status != http.StatusCreated {
			t.Fatalf("POST: %d %s", r.Status, r.Body)
		}
	}
	apitest.Eventually(t, "every skier of the burst counted once", func() string {
		r := apitest.Call(t, "GET", base+"/resorts/1/seasons/2024/day/2/skiers", "")
		var body struct{ NumSkiers int }
		if err := json.Unmarshal(r.Body, &body); err != nil || body.NumSkiers != skiers {
			return fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		return ""
	})
	if px.Throttled() == 0 {
		t.Fatal("the proxy throttled nothing: the test shows nothing")
	}
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	if got := metricSum(metrics, "skidata_store_throttled_total", `table="`+cfg.Dynamo.TablePrefix+`skierTable"`); got == 0 {
		t.Errorf("/metrics shows no throttled requests of the skier table; the proxy throttled %d", px.Throttled())
	}
	if got := metricSum(metrics, "skidata_store_capacity_units_total", `kind="write"`, `op="AddRides"`); got < skiers {
		t.Errorf("/metrics shows %v write units for AddRides; want at least %d", got, skiers)
	}
}

// createTables creates the tables of the store cfg names, as `skiapi tables
// create` does: through the default credential chain.
func createTables(t *testing.T, cfg compose.Config) {
	t.Helper()
	dc := cfg.DynamoConfig()
	client, err := dynamo.NewClient(dynamotest.Context(t), dc)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTables(dynamotest.Context(t), client, dc.TablePrefix, dc.Model); err != nil {
		t.Fatalf("create the tables of %s: %v", cfg.Store, err)
	}
}
