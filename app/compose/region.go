package compose

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// startupCheckTimeout bounds each dependency check at start-up, so that a
// service pointed at an endpoint that never answers fails instead of
// hanging in its unit's start.
const startupCheckTimeout = 30 * time.Second

// imdsTimeout bounds the instance-metadata lookup, the SDK's retries
// included: on EC2 it answers in milliseconds; elsewhere nothing answers
// at all, and a start there should fail soon, naming the settings that
// avoid the lookup. On EC2 a start that fails is retried by its unit.
const imdsTimeout = 2 * time.Second

// envIMDSEndpoint is the AWS SDK's own variable for another metadata
// endpoint (IPv6, or a test server).
const envIMDSEndpoint = "AWS_EC2_METADATA_SERVICE_ENDPOINT"

// instanceRegion asks the EC2 instance metadata service (IMDSv2) for the
// region the instance runs in: the ec2 profile's region when neither
// --dynamo-region, SKI_DYNAMO_REGION nor AWS_REGION says. It logs that it
// asks before it does, since off EC2 the question waits for imdsTimeout.
func instanceRegion(ctx context.Context, log *slog.Logger) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, imdsTimeout)
	defer cancel()
	log.Info("no region set: asking the EC2 instance metadata service for it; set AWS_REGION or --dynamo-region to skip this",
		"timeout", imdsTimeout.String())
	client := imds.New(imds.Options{Endpoint: os.Getenv(envIMDSEndpoint)})
	out, err := client.GetRegion(ctx, nil)
	if err == nil && out.Region == "" {
		err = fmt.Errorf("the metadata service returned an empty region")
	}
	if err != nil {
		return "", fmt.Errorf("AWS region missing (DynamoDB's and SQS's): AWS_REGION is unset and the EC2 instance metadata service did not give it within %s (%w); set AWS_REGION or --dynamo-region", imdsTimeout, err)
	}
	return out.Region, nil
}
