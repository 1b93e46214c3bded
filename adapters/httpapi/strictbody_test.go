package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

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
