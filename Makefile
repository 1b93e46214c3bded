# skidata: the one test command is `make test`.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: test run generate check-generated vet fmt-check services build

## test: everything CI runs: generated files fresh, gofmt, vet, and every test with -race
test: services fmt-check vet
	$(GO) test -race -count=1 -timeout 20m ./...

## run: the service in memory mode on :8080
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
