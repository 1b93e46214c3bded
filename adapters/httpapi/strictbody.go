package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/skidata/skidata/domain"
)

// The generated strict handler decodes a body with encoding/json, which
// matches field names case-insensitively, ignores unknown fields and stops
// after the first value: {"TIME":3,"LIFTID":4} was a ride, and of
// {"time":1,"liftID":2}{"time":5,"liftID":9} the second ride was silently
// dropped. strictBodies decodes every body the spec declares first, with
// encoding/json/v2's semantics (github.com/go-json-experiment/json, its
// mirror until Go makes it standard), which match names case-sensitively
// and refuse a repeated name; unknown names are refused on request, and
// what follows the value is checked here. A body it accepts is handed on
// unchanged, and the generated decoder, stricter in nothing, reads it
// again.

// bodies maps each route with a JSON body, by its pattern as the router
// reports it in Request.Pattern, to a new value of the type the generated
// code decodes that body into. TestEveryOperationWithABodyIsDecodedStrictly
// holds it to openapi.yaml.
var bodies = map[string]func() any{
	writeRidePattern:                   func() any { return new(WriteNewLiftRideJSONRequestBody) },
	"POST /resorts/{resortID}/seasons": func() any { return new(AddSeasonJSONRequestBody) },
}

// strictBodies is the router middleware that applies the rules.
func strictBodies(errs errorWriter) MiddlewareFunc {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			newBody, ok := bodies[r.Pattern]
			if !ok {
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
			var tooBig *http.MaxBytesError
			var ne net.Error
			switch {
			case err == nil:
				err = checkBody(b, newBody())
			case errors.As(err, &tooBig): // a 413, from responseError
			case errors.As(err, &ne) && ne.Timeout(): // the server's read deadline passed
				unreadable(w, http.StatusRequestTimeout, BodyTimeoutMessage)
				return
			default: // the client went away, or broke the chunked encoding
				unreadable(w, http.StatusBadRequest, BodyUnreadableMessage)
				return
			}
			if err != nil {
				errs.responseError(w, r, err)
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
// it has one (every client of the API sends Content-Length; a length over
// MaxBodyBytes was refused before the router), rather than growing one as
// io.ReadAll does. A body shorter than declared is an error, io.EOF too.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 {
		b := make([]byte, n)
		_, err := io.ReadFull(r.Body, b)
		return b, err
	}
	return io.ReadAll(r.Body) // chunked; the MaxBytesReader bounds it
}

// BodyTimeoutMessage answers (408) a body that stopped arriving before the
// server's read timeout; BodyUnreadableMessage (400) one that ended before
// it was complete or whose chunked encoding is broken. Both are fixed: the
// cause names the connection's addresses and is Go's, not the client's.
const (
	BodyTimeoutMessage    = "request body did not arrive in time; send the whole body without pausing"
	BodyUnreadableMessage = "request body could not be read: the connection ended or the chunked encoding is broken"
)

// unreadable answers a body that could not be read to its end, and closes
// the connection, whose framing is lost.
func unreadable(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Connection", "close")
	writeJSONError(w, status, msg)
}

// checkBody decodes b into body (a pointer to the route's body type) and
// says, as a domain.ErrInvalid, which rule b breaks: exactly one JSON
// object, names as in the spec, each once, with values of the spec's types.
func checkBody(b []byte, body any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if dec.PeekKind() != '{' { // null, too, would decode into an empty body
		_, err := dec.ReadValue()
		if err == nil {
			return domain.Invalid("request body must be %s", shape(body))
		}
		return bodyError(err, body)
	}
	if err := json.UnmarshalDecode(dec, body, json.RejectUnknownMembers(true)); err != nil {
		return bodyError(err, body)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return domain.Invalid("request body must be exactly one JSON object, with nothing after it; send one request per ride")
	}
	return nil
}

// bodyError words what the decoder refused, in the client's terms.
func bodyError(err error, body any) error {
	var syntax *jsontext.SyntacticError
	var semantic *json.SemanticError
	switch {
	case err == io.EOF:
		return domain.Invalid("request body is required (JSON)")
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syntax):
		return domain.Invalid("field %q appears twice; send it once", syntax.JSONPointer.LastToken())
	case errors.Is(err, json.ErrUnknownName) && errors.As(err, &semantic):
		return domain.Invalid("field %q is not in the spec: the body is %s (names are case-sensitive)", semantic.JSONPointer.LastToken(), shape(body))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("request body is not valid JSON: it ends too soon")
	case errors.As(err, &syntax):
		return domain.Invalid("request body is not valid JSON: %v", syntax.Err)
	case errors.As(err, &semantic) && semantic.GoType != nil:
		got := map[jsontext.Kind]string{'"': "string", '0': "number", 't': "bool", 'f': "bool", '{': "object", '[': "array"}[semantic.JSONKind]
		if semantic.JSONKind == '0' && semantic.Err != nil {
			got += " " + string(semantic.JSONValue) // a number that is not one of the type's: say which
		}
		return domain.Invalid("field %s must be %s, got a JSON %s", semantic.JSONPointer.LastToken(), jsonKind(semantic.GoType), got)
	default:
		return domain.Invalid("request body could not be decoded as JSON; see openapi.yaml for what each operation takes")
	}
}

// shape names the JSON object body points to: its fields, as spelled in
// the spec.
func shape(body any) string {
	t := reflect.TypeOf(body).Elem()
	names := make([]string, t.NumField())
	for i := range names {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[i] = strconv.Quote(name)
	}
	slices.Sort(names)
	return "a JSON object with the fields " + strings.Join(names, ", ")
}

// jsonKind names, in JSON's terms, what a value of Go type t must be.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.String:
		return "a string"
	}
	return t.String()
}
