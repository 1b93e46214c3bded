package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CheckTables describes every table the model needs and fails, naming the
// table, when one is missing or not yet usable, so that a service started
// before `skiapi tables create` stops at once with the fix in the message
// instead of failing on its first request. Any other error (endpoint
// unreachable, credentials refused) is returned naming DynamoDB.
func CheckTables(ctx context.Context, client TableAPI, prefix, model string) error {
	defs, err := TableDefinitions(prefix, model)
	if err != nil {
		return err
	}
	for _, def := range defs {
		name := aws.ToString(def.TableName)
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
		var missing *types.ResourceNotFoundException
		switch {
		case errors.As(err, &missing):
			return fmt.Errorf("DynamoDB table %s does not exist: run `skiapi tables create` (with the same --store and --dynamo-table-prefix) or deploy the CloudFormation stack first: %w", name, err)
		case err != nil:
			return fmt.Errorf("DynamoDB: describe table %s: %w", name, err)
		}
		if s := out.Table.TableStatus; s != types.TableStatusActive && s != types.TableStatusUpdating {
			return fmt.Errorf("DynamoDB table %s is %s, not ACTIVE: wait for it (skiapi tables describe) and start again", name, s)
		}
	}
	return nil
}
