// Package deploy holds what runs the service on AWS, not Go code:
// aws/skidata.yaml (the CloudFormation stack of docs/operations.md),
// aws/pitr-restore.sh (its point-in-time restore),
// systemd/ (the units the stack's instances install), prometheus/ (scrape
// config, alert rules and their promtool unit tests), grafana/ (the
// dashboard) and cfnspec/ (CloudFormation's resource specification, pinned
// through npm). Its tests keep all of it honest: the template against the
// specification (cfnspec_test.go) and against the code — the tables must be
// the ones adapters/dynamo creates, one set per data model, and each
// instance role's IAM policy must allow exactly the DynamoDB actions the
// adapters call in that role, recorded by running the store contract suites
// through a recording client (template_test.go), and the SQS actions
// adapters/sqs calls in that role and the queues' attributes, recorded
// through the SQS stand-in's strict proxy (sqs_test.go); the queue choice
// and the broker-user function (queue_test.go); the runbook's create
// command against the template's rules, and its first day followed command
// by command on a local stack (runbook_test.go);
// the restore script against a stand-in for the AWS CLI (pitr_test.go); the
// units against systemd-analyze and a real systemd (systemd_test.go,
// systemd_boot_test.go); the rules and the dashboard against promtool and
// the metrics the service serves (monitoring_test.go); the cost table of
// docs/operations.md, both queues at both traffic levels (cost_test.go).
package deploy
