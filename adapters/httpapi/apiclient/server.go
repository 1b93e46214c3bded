package apiclient

import "strings"

// ServerURL is a base URL (http://host:port, possibly with a path) as the
// NewXxxRequest builders want it: they resolve "./route" against it, so
// without a trailing slash its last path segment would be lost
// (http://host/api + ./skiers = http://host/skiers).
func ServerURL(base string) string { return strings.TrimRight(base, "/") + "/" }
