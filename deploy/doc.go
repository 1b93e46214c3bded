// Package deploy holds what runs the service on AWS, not Go code:
// aws/skidata.yaml (the CloudFormation stack of docs/operations.md) and
// systemd/ (the units the stack's instances install). Its tests keep the
// template honest against the code: the tables, keys and indexes must be
// the ones adapters/dynamo creates, and the instances' IAM policy must
// allow exactly the DynamoDB actions the adapters call, recorded by running
// the store contract suites through a recording client.
package deploy
