// Package fakesecrets is a local stand-in for AWS Secrets Manager: an HTTP
// server speaking the JSON 1.1 protocol for GetSecretValue, for tests that
// point the SDK's endpoint at it.
package fakesecrets

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server holds secrets by ARN or name.
type Server struct {
	URL string

	mu      sync.Mutex
	values  map[string]string
	reads   map[string]int
	targets []string
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{values: map[string]string{}, reads: map[string]int{}}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// Set stores value as the secret's current version.
func (s *Server) Set(id, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[id] = value
}

// Reads is how many times GetSecretValue read the secret.
func (s *Server) Reads(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[id]
}

// Targets are the X-Amz-Target headers of every request, in order.
func (s *Server) Targets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.targets...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	s.mu.Lock()
	s.targets = append(s.targets, target)
	s.mu.Unlock()
	if r.Method != http.MethodPost || target != "secretsmanager.GetSecretValue" {
		fail(w, http.StatusBadRequest, "UnknownOperationException", "the fake serves GetSecretValue only")
		return
	}
	var in struct{ SecretId string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
		return
	}
	s.mu.Lock()
	v, ok := s.values[in.SecretId]
	if ok {
		s.reads[in.SecretId]++
	}
	s.mu.Unlock()
	if !ok {
		fail(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v,
		"VersionId": "00000000-0000-0000-0000-000000000001", "VersionStages": []string{"AWSCURRENT"},
	})
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
