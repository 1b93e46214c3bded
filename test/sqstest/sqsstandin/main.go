// Command sqsstandin runs the SQS stand-in the tests use, fauxqs behind
// the strict proxy (adapters/sqs/sqssim), for load runs by hand: it
// prints the endpoint to give skiapi (--sqs-endpoint) and runs until
// SIGINT or SIGTERM. With -create NAME it first makes the queue NAME and NAME-dlq
// as `skiapi queues create` does.
//
//	go run ./test/sqstest/sqsstandin -create skidata-rides
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
)

func main() {
	create := flag.String("create", "", "make this ride queue and its dead-letter queue before serving")
	flag.Parse()
	srv, err := sqssim.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqsstandin:", err)
		os.Exit(1)
	}
	defer srv.Stop()
	if *create != "" {
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
			if os.Getenv(k) == "" {
				os.Setenv(k, v)
			}
		}
		if _, err := sqs.CreateQueues(context.Background(), sqs.Config{Queue: *create, Endpoint: srv.Endpoint, Region: sqssim.Region}); err != nil {
			fmt.Fprintln(os.Stderr, "sqsstandin:", err)
			srv.Stop()
			os.Exit(1)
		}
	}
	fmt.Println(srv.Endpoint)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}
