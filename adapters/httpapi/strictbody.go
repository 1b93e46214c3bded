package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/skidata/skidata/domain"
)

// The generated strict handler decodes a body with encoding/json, which
// matches field names case-insensitively, ignores unknown fields and stops
// after the first value: {"TIME":3,"LIFTID":4} was a ride, and of
// {"time":1,"liftID":2}{"time":5,"liftID":9} the second ride was silently
// dropped. strictBodies checks every body the spec declares before the
// generated code sees it, without editing that code: the body must be
// exactly one JSON object whose field names are spelled as in the spec, each
// at most once. Value types are left to the generated decoder, whose
// messages name the field.

// bodyRules lists, per route pattern ("POST /resorts/{resortID}/seasons",
// as the router reports it in Request.Pattern), the field names the spec
// allows in the route's JSON body, sorted. It reads the embedded spec, so a
// new operation with a body is covered without a change here.
func bodyRules() (map[string][]string, error) {
	spec, err := GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("read the embedded spec: %w", err)
	}
	rules := map[string][]string{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			media := op.RequestBody.Value.Content.Get("application/json")
			if media == nil || media.Schema == nil || media.Schema.Value == nil {
				continue
			}
			fields := make([]string, 0, len(media.Schema.Value.Properties))
			for name := range media.Schema.Value.Properties {
				fields = append(fields, name)
			}
			slices.Sort(fields)
			rules[method+" "+path] = fields
		}
	}
	return rules, nil
}

// strictBodies is the router middleware that applies rules. A body it
// accepts is handed on unchanged.
func strictBodies(rules map[string][]string, errs errorWriter) MiddlewareFunc {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fields, ok := rules[r.Pattern]
			if !ok || r.Body == nil {
				next.ServeHTTP(w, r)
				return
			}
			if enc := contentCoding(r.Header); enc != "" {
				// RFC 9110 15.5.16: say which codings would be accepted.
				w.Header().Set("Accept-Encoding", "identity")
				writeJSONError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are not decoded: Content-Encoding %q is not supported; send plain JSON without Content-Encoding", enc))
				return
			}
			b, err := readBody(r)
			if err == nil {
				err = checkBody(b, fields)
			}
			if err != nil {
				var de *domain.Error
				if errors.As(err, &de) {
					writeJSONError(w, statusOf(err), de.Msg)
				} else {
					errs.requestError(w, r, err)
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			next.ServeHTTP(w, r)
		})
	}
}

// contentCoding is the request's Content-Encoding, or "" when it has none
// but identity. The server decodes none: a gzip body would reach the JSON
// decoder as binary.
func contentCoding(h http.Header) string {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return c[:min(len(c), 32)] // a coding's name, not a page of it in the answer
			}
		}
	}
	return ""
}

// readBody reads the whole body, into a buffer of its declared length when
// it has one (every client of the API sends Content-Length), rather than
// growing one as io.ReadAll does. An error other than the size limit is an
// unreadableBody: the bytes did not arrive, which says nothing about JSON.
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > MaxBodyBytes {
		b, err := io.ReadAll(r.Body) // chunked; the MaxBytesReader still bounds it
		return b, asUnreadable(err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, asUnreadable(err) // io.EOF too: shorter than declared, not empty
	}
	return b, nil
}

// unreadableBody is a body that could not be read to its end: the client
// stalled (a timeout), went away, or broke the chunked encoding. Its cause
// names the connection's addresses, so it is never shown to the client.
type unreadableBody struct{ cause error }

func (u unreadableBody) Error() string { return "read the request body: " + u.cause.Error() }
func (u unreadableBody) Unwrap() error { return u.cause }

// timedOut: the server's read deadline passed while it waited for the body.
func (u unreadableBody) timedOut() bool {
	var ne net.Error
	return errors.As(u.cause, &ne) && ne.Timeout()
}

func asUnreadable(err error) error {
	var tooBig *http.MaxBytesError
	if err == nil || errors.As(err, &tooBig) {
		return err
	}
	return unreadableBody{cause: err}
}

// checkBody walks the body's top level token by token. Malformed JSON comes
// back as the decoder's error (for requestError to word); a body that is
// JSON but breaks a rule is a domain.ErrInvalid saying which.
func checkBody(b []byte, fields []string) error {
	if flatObjectOK(b, fields) {
		return nil // the common case, without the token walk below
	}
	return walkBody(b, fields)
}

// walkBody is checkBody without its fast path.
func walkBody(b []byte, fields []string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err // io.EOF: no body at all
	}
	err = checkObject(dec, tok, fields)
	if err == io.EOF {
		return io.ErrUnexpectedEOF // the object began but did not end
	}
	return err
}

func checkObject(dec *json.Decoder, tok json.Token, fields []string) error {
	shape := "a JSON object with the fields " + quoted(fields)
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return domain.Invalid("request body must be %s", shape)
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string) // the decoder only yields strings as keys
		if _, found := slices.BinarySearch(fields, name); !found {
			return domain.Invalid("field %q is not in the spec: the body is %s (names are case-sensitive)", name, shape)
		}
		if seen[name] {
			return domain.Invalid("field %q appears twice; send it once", name)
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return domain.Invalid("request body must be exactly one JSON object, with nothing after it; send one request per ride")
	}
	return nil
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// flatObjectOK is checkBody's fast path for the bodies clients send: one
// flat object whose keys are plain ASCII names of the spec, each once, and
// whose values are numbers, true, false or null, with only white space
// around it. It answers true only when the body certainly keeps the rules
// (the generated decoder still checks the values); anything else (strings,
// escapes, nesting, a malformed token) goes to the token walk, which words
// the error.
func flatObjectOK(b []byte, fields []string) bool {
	var seen uint64 // bit i: fields[i] was present
	if len(fields) > 64 {
		return false
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(b) && isNameByte(b[end]) {
			end++
		}
		if end >= len(b) || b[end] != '"' {
			return false
		}
		k, found := slices.BinarySearch(fields, string(b[i+1:end]))
		if !found || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		start := i
		for i < len(b) && isScalarByte(b[i]) {
			i++
		}
		if i == start {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isScalarByte: the bytes of a JSON number, true, false or null.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' ||
		c >= 'a' && c <= 'z'
}
