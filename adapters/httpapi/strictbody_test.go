package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestEveryOperationWithABodyIsDecodedStrictly: every operation of the
// spec with a JSON body has its body type in bodies, whose fields are the
// spec's, and bodies names no other route.
func TestEveryOperationWithABodyIsDecodedStrictly(t *testing.T) {
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	withBody := 0
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			withBody++
			pattern := method + " " + path
			newBody, ok := bodies[pattern]
			if !ok {
				t.Errorf("%s (%s) has a body and no entry in bodies", pattern, op.OperationID)
				continue
			}
			schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
			var fields []string
			for name := range schema.Properties {
				fields = append(fields, fmt.Sprintf("%q", name))
			}
			slices.Sort(fields)
			if got, want := shape(newBody()), "a JSON object with the fields "+strings.Join(fields, ", "); got != want {
				t.Errorf("%s: the body type is %s; the spec says %s", pattern, got, want)
			}
		}
	}
	if withBody != len(bodies) || withBody < 2 {
		t.Errorf("bodies has %d routes, the spec %d operations with a body", len(bodies), withBody)
	}
}

// FuzzTheGeneratedDecoderReadsWhatTheStrictCheckAccepts: a ride body that
// checkBody accepts is decoded by the generated code's encoding/json to
// the same ride, without an error (it is decoded twice; only the first
// decoder may refuse).
func FuzzTheGeneratedDecoderReadsWhatTheStrictCheckAccepts(f *testing.F) {
	for _, s := range []string{`{"time":217,"liftID":21}`, ` {"liftID" : 5 , "time":0} `, `{"time":1,"time":2}`, `{"time":1}{"time":2}`,
		`{"ti\u006de":1}`, `{"time":-0}`, `{"time":null,"liftID":2}`, `{}`, `{"TIME":1}`, `{"time":1e2}`, `{"time":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var strict LiftRide
		if checkBody(b, &strict) != nil {
			return
		}
		var generated LiftRide
		if err := json.NewDecoder(strings.NewReader(string(b))).Decode(&generated); err != nil || !reflect.DeepEqual(strict, generated) {
			t.Fatalf("%q: the strict check read %+v, encoding/json %+v (%v)", b, strict, generated, err)
		}
	})
}
