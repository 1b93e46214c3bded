// Package sqssim is Amazon SQS as the tests and the nemesis run it:
// fauxqs, a local SQS on Node.js pinned in test/sqs (install: npm ci
// --prefix test/sqs), behind a strict proxy (Proxy) that refuses what SQS
// refuses and fauxqs accepts, models SQS's in-flight quota, and injects
// on demand what SQS does and fauxqs never does: throttling, failed batch
// entries, a message delivered twice. docs/sqs.md says what is and is not
// modelled. test/sqstest runs it for the tests and `skiload nemesis` for
// its SQS modes; like adapters/dynamo/dynamosim it is a lab instrument,
// not part of the service. The static credentials and the region here
// are for the stand-in only.
package sqssim

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skidata/skidata/adapters/standin"
)

// Region is the region the stand-in's clients sign for.
const Region = "us-east-1"

// Client returns a client for endpoint with the stand-in's static
// credentials.
func Client(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// InstallHint is how to install fauxqs, for every message that finds it
// missing.
const InstallHint = "run `npm ci --prefix test/sqs` from the repository root (scripts/services.sh does it)"

// Server is a running fauxqs behind a strict proxy (Proxy).
type Server struct {
	// Endpoint is the strict proxy's URL: what clients use, so that fauxqs
	// is held to what SQS accepts.
	Endpoint string
	// Upstream is fauxqs's own URL, for another Proxy in front of it (with
	// other Options) or a test of fauxqs itself.
	Upstream string
	// Proxy is the strict proxy at Endpoint.
	Proxy *Proxy
	proc  *standin.Process
}

// listeningOn starts the line test/sqs/listen.mjs prints once fauxqs
// listens; the port follows it.
const listeningOn = "fauxqs listening on port "

// Start runs fauxqs on a loopback port the kernel picks, puts a strict
// proxy with default Options in front of it, and returns once both listen.
// Call Stop when done.
func Start() (*Server, error) {
	proc, err := standin.Start(standin.Spec{Name: "fauxqs", Dir: "test/sqs", Script: "listen.mjs", Listening: listeningOn, Hint: InstallHint})
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

// Stop ends the proxy and fauxqs and waits for fauxqs to exit. Every queue
// and message in it is gone: fauxqs keeps nothing on disk.
func (s *Server) Stop() {
	if s.Proxy != nil {
		s.Proxy.Close()
	}
	s.proc.Stop()
}
