package dynamo_test

import (
	"strings"
	"testing"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/test/dynamotest"
)

func TestCheckTablesNamesTheMissingTableAndTheFix(t *testing.T) {
	prefix := dynamotest.Prefix(t)
	err := dynamo.CheckTables(dynamotest.Context(t), dynamotest.Client(t), prefix, dynamo.ModelAdopted)
	if err == nil {
		t.Fatal("CheckTables found tables that were never created")
	}
	for _, want := range []string{prefix + dynamo.SkierTableName, "does not exist", "skiapi tables create"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestCheckTablesAcceptsCreatedTables(t *testing.T) {
	for _, model := range []string{dynamo.ModelAdopted, dynamo.ModelAbandoned} {
		client := dynamotest.Client(t)
		cfg := newTables(t, client, model)
		if err := dynamo.CheckTables(dynamotest.Context(t), client, cfg.TablePrefix, model); err != nil {
			t.Errorf("model %s: %v", model, err)
		}
	}
}
