package e2e

import (
	"testing"

	"github.com/skidata/skidata/adapters/dynamo"
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
			// As `skiapi tables create` does, through the default credential chain.
			if err := compose.CreateDynamoTables(dynamotest.Context(t), cfg); err != nil {
				t.Fatalf("CreateDynamoTables: %v", err)
			}
			apitest.Run(t, apitest.Start(t, cfg))
		})
	}
}
