// Package dynamosim is DynamoDB as AWS runs it, simulated in front of
// dynalite (a DynamoDB-compatible server on Node.js, pinned in
// test/dynamodb): a proxy that refuses what AWS refuses and dynalite
// accepts (strict.go), accounts capacity units per partition key value as
// AWS bills them, optionally throttles a partition past AWS's
// per-partition limits (throughput.go), and optionally makes global
// secondary index reads and eventually consistent reads lag behind the
// writes as they can on AWS, where dynalite shows every write at once
// (lag.go, Options.Lag; off by default). The tests (test/dynamotest) and
// skibench's data-model lab both run through it; it is a lab instrument,
// not part of the service.
package dynamosim

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/standin"
)

// Region is the region the simulation's clients sign for.
const Region = "us-west-2"

const installHint = "run `npm ci --prefix test/dynamodb` from the repository root"

// Server is a running dynalite behind a strictness proxy.
type Server struct {
	// Endpoint is the strictness proxy's URL: what clients use, so that
	// dynalite is held to what AWS accepts (proxy.go).
	Endpoint string
	// Upstream is dynalite's own URL, for another Proxy in front of it
	// (with other Options) or a test of dynalite itself.
	Upstream string
	// Proxy is the strictness proxy at Endpoint.
	Proxy *Proxy
	proc  *standin.Process
}

// Start runs dynalite on a loopback port the kernel picks, with the extra
// command-line args as --name value pairs (e.g. "--maxItemSizeKb", "4"),
// and returns once it listens. The launcher (test/dynamodb/listen.js)
// listens on port 0 and prints the port it got: picking a free port here
// and handing it over would leave a moment in which another process could
// take it.
func Start(args ...string) (*Server, error) {
	proc, err := standin.Start(standin.Spec{Name: "dynalite", Dir: "test/dynamodb", Script: "listen.js", Listening: listeningOn, Hint: installHint}, args...)
	if err != nil {
		return nil, err
	}
	s := &Server{proc: proc, Upstream: proc.URL}
	px, err := StartProxy(s.Upstream, Options{})
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.Proxy, s.Endpoint = px, px.URL
	return s, nil
}

// listeningOn starts the line listen.js prints once dynalite listens; the
// port follows it.
const listeningOn = "dynalite listening on port "

// Stop ends the server and waits for it to exit.
func (s *Server) Stop() {
	if s.Proxy != nil {
		s.Proxy.Close()
	}
	s.proc.Stop()
}

// ClientFor returns a test client for the given endpoint.
func ClientFor(url string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, optFns...)
}
