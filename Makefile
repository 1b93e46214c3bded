# skidata: the one test command is `make test`.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: stand-ins test test-short test-cluster test-deploy soak run generate check-generated vet fmt-check services build release

## test: everything CI runs: generated files fresh, gofmt, vet, and every test with -race.
## The packages whose tests mostly wait (RabbitMQ nodes booting, processes
## started and killed, dynalite) go first, then test/short (which runs
## go test -short ./... itself, so it would otherwise end the run alone), and
## four programs (compiles or test binaries) run at once rather than one
## per core: while one waits, another compiles.
SLOW_FIRST := ./test/e2e/ ./cmd/skiload/internal/nemesis/ ./adapters/dynamo/ ./cmd/skiload/ ./cmd/skibench/internal/bench/ ./deploy/ ./test/short/
test: services fmt-check vet
	$(GO) test -race -count=1 -p 4 -timeout 20m $(SLOW_FIRST) ./...

## test-short: what needs nothing but Go (unit tests, the contract suites
## on memory and in-process, the API suite in memory mode); every test that
## needs a server, a program or root skips, naming it (test/needs). It
## passes on a machine with only Go installed; test/short proves that under
## make test. No -race: the race detector needs cgo and so a C compiler,
## which such a machine lacks, and it slows both compiling and running
## past the minute this target is for; make test runs everything with it.
test-short:
	$(GO) test -short -count=1 ./...

## test-cluster: the RabbitMQ failover test (three local nodes of its own,
## the leader of the ride queues stopped and killed under load) and the
## amqps test, alone; both also run under make test
test-cluster: services
	$(GO) test -race -count=1 -timeout 10m -v -run 'TestClusterLeaderNodeLossLosesNoRide|TestAMQPSWithTheBrokersCA' ./test/e2e/

## test-deploy: the CloudFormation template (against CloudFormation's
## resource specification and the code), the systemd units
## (systemd-analyze, and booted under systemd in systemd-nspawn), the
## Prometheus rules (promtool) and the dashboard
test-deploy: services
	$(GO) test -count=1 -v ./deploy/

## soak: the nemesis (docs/reliability.md): every mode in turn under
## random faults for SOAK_DURATION, then every ride accounted for; each
## mode ends with "MODE lost=N duplicated=N phantom=N faults=N", and the
## target fails on any violation. SOAK_MODES picks modes (comma-separated,
## e.g. rabbitmq-postgres,rabbitmq-cluster), SOAK_SEED repeats a run's
## draws. Histories, reports, charts and logs go to soak/<mode>/. Runs
## PostgreSQL and RabbitMQ nodes of its own, never the machine's, and the
## SQS and DynamoDB stand-ins the tests use (make stand-ins installs them).
SOAK_DURATION ?= 10m
SOAK_MODES ?=
SOAK_SEED ?= 0
soak: stand-ins
	$(GO) build -o bin/ ./cmd/skiapi ./cmd/skiload
	bin/skiload nemesis --skiapi bin/skiapi --duration $(SOAK_DURATION) --seed $(SOAK_SEED) $(if $(SOAK_MODES),--modes $(SOAK_MODES)) --out soak

## stand-ins: the npm packages of the DynamoDB and SQS stand-ins (dynalite,
## fauxqs, pinned by their lock files) when they are missing
stand-ins:
	@for d in test/dynamodb test/sqs; do \
	  [ -d $$d/node_modules ] || npm ci --prefix $$d --no-audit --no-fund >/dev/null \
	    || { echo "make: npm ci --prefix $$d failed (the soak's SQS and DynamoDB modes need Node.js and npm)" >&2; exit 1; }; \
	done

## run: the service in memory mode on 127.0.0.1:8080
run:
	$(GO) run ./cmd/skiapi

## generate: regenerate the OpenAPI server and wire_gen.go
generate:
	$(GO) generate ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## services: start what the tests need that is not running, or fail naming it
services:
	@scripts/services.sh

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/ ./cmd/...

## release: static linux/amd64 and linux/arm64 binaries (version embedded), the
## systemd units and docs/operations.md in dist/<version>/: upload that folder
## to s3://<bucket>/skidata/<version>/ (docs/operations.md). Checks that the
## binary for this machine prints the version it was given.
RELEASE_DIR ?= dist/$(VERSION)
release:
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	for arch in amd64 arm64; do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "-s -w -X main.version=$(VERSION)" -o $(RELEASE_DIR)/skiapi-linux-$$arch ./cmd/skiapi || exit 1; \
	done
	cp deploy/systemd/skiapi-api.service deploy/systemd/skiapi-consumer.service docs/operations.md $(RELEASE_DIR)/
	@host=$$($(GO) env GOHOSTOS)-$$($(GO) env GOHOSTARCH); \
	if [ -x $(RELEASE_DIR)/skiapi-$$host ]; then \
	  got=$$($(RELEASE_DIR)/skiapi-$$host version); \
	  [ "$$got" = "skiapi $(VERSION)" ] || { echo "release: $(RELEASE_DIR)/skiapi-$$host version printed '$$got', want 'skiapi $(VERSION)': is -X main.version still the variable's path?"; exit 1; }; \
	  echo "release: $$got in $(RELEASE_DIR)"; \
	fi
	@cd $(RELEASE_DIR) && sha256sum * > SHA256SUMS
