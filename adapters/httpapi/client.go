package httpapi

import "strings"

// The generated client (client.gen.go, from client.yaml) is what skiload
// and the end-to-end tests speak: the spec is the one place routes and
// bodies are spelled, so a change to the spec that breaks a client breaks
// the build, not a load run. For load generation use the NewXxxRequest
// builders with your own http.Client (they allocate no more than a
// hand-built request); the ClientWithResponses methods also parse every
// answer.

// ServerURL is a base URL (http://host:port, possibly with a path) as the
// NewXxxRequest builders want it: they resolve "./route" against it, so
// without a trailing slash its last path segment would be lost
// (http://host/api + ./skiers = http://host/skiers).
func ServerURL(base string) string { return strings.TrimRight(base, "/") + "/" }
